// Temporary files that must not outlive an interrupted process. A writer registers the temporary
// file it is filling (TempFileRegistration) until the file is renamed into place or removed; a
// SIGINT, SIGTERM or SIGHUP, or a fatal exception, then removes every registered file before the
// process dies.
//
// The registry is the one piece of process-wide state in core: a signal handler can reach nothing
// else. It holds at most kMaxTempFiles paths of fewer than kMaxTempPathBytes bytes at once; a
// path it cannot hold is simply not cleaned up on a signal (the write itself is unaffected).
#pragma once

#include <cstddef>
#include <string>

namespace meshplan {

inline constexpr int kMaxTempFiles = 64;
inline constexpr size_t kMaxTempPathBytes = 4096;

// Registers `path` for removal on interruption for as long as the object lives. Thread-safe.
class TempFileRegistration {
 public:
  explicit TempFileRegistration(const std::string& path);
  ~TempFileRegistration();
  TempFileRegistration(const TempFileRegistration&) = delete;
  TempFileRegistration& operator=(const TempFileRegistration&) = delete;

 private:
  int slot_ = -1;  // -1: not registered (the registry was full or the path too long)
};

// Removes every registered file. Async-signal-safe (atomics and unlink only). For a process about
// to end: the registry slots it empties are not reused.
void RemoveRegisteredTempFiles();

// Installs handlers for SIGINT, SIGTERM and SIGHUP that remove the registered files, restore the
// default action and raise the signal again, so the process still dies of it (exit status
// 128 + signal in a shell). Call once, early in main.
void InstallTempFileCleanupOnSignals();

}  // namespace meshplan
