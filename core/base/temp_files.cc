#include "core/base/temp_files.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

namespace meshplan {
namespace {

// A slot is free, being filled by a writer, holding a path a handler may remove, or taken by a
// handler that is removing it (and is never reused after that: the process is dying).
enum SlotState : int { kFree = 0, kFilling = 1, kReady = 2, kRemoving = 3 };

struct Slot {
  std::atomic<int> state{kFree};
  char path[kMaxTempPathBytes];
};
static_assert(std::atomic<int>::is_always_lock_free, "signal handlers need lock-free atomics");

// The registry: process-wide by necessity (see the header), reached only through this function.
Slot* Slots() {
  static Slot slots[kMaxTempFiles];
  return slots;
}

void RemoveAndReraise(int signal_number) {
  RemoveRegisteredTempFiles();
  ::signal(signal_number, SIG_DFL);
  ::raise(signal_number);
}

}  // namespace

TempFileRegistration::TempFileRegistration(const std::string& path) {
  if (path.size() >= kMaxTempPathBytes) return;
  Slot* slots = Slots();
  for (int i = 0; i < kMaxTempFiles; ++i) {
    int expected = kFree;
    if (slots[i].state.compare_exchange_strong(expected, kFilling)) {
      std::memcpy(slots[i].path, path.c_str(), path.size() + 1);
      slots[i].state.store(kReady);
      slot_ = i;
      return;
    }
  }
}

TempFileRegistration::~TempFileRegistration() {
  if (slot_ < 0) return;
  // Fails only when a handler took the slot: it stays taken, so its path is never rewritten
  // while the handler reads it.
  int expected = kReady;
  Slots()[slot_].state.compare_exchange_strong(expected, kFree);
}

void RemoveRegisteredTempFiles() {
  Slot* slots = Slots();
  for (int i = 0; i < kMaxTempFiles; ++i) {
    int expected = kReady;
    if (slots[i].state.compare_exchange_strong(expected, kRemoving)) ::unlink(slots[i].path);
  }
}

void InstallTempFileCleanupOnSignals() {
  Slots();  // construct the registry before any handler can run
  struct sigaction action;
  std::memset(&action, 0, sizeof action);
  action.sa_handler = RemoveAndReraise;
  sigemptyset(&action.sa_mask);
  for (int signal_number : {SIGINT, SIGTERM, SIGHUP}) {
    // Keep an ignored signal ignored (nohup, or a shell running us in the background).
    struct sigaction old;
    if (::sigaction(signal_number, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) continue;
    ::sigaction(signal_number, &action, nullptr);
  }
}

}  // namespace meshplan
