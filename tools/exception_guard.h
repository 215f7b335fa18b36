// The last guard of the meshplan CLI: whatever escapes a command (std::bad_alloc from a workload
// too large for this machine, std::length_error, anything) ends as one error line and exit code 2
// rather than an abort with a core dump. Checks before allocating should catch such cases first;
// this is the backstop.
#pragma once

#include <functional>

namespace meshplan::tools {

// Runs `command` and returns its exit code; an exception it throws is reported as one line
// ("meshplan: error: out of memory ..." for std::bad_alloc) and gives kExitInvalidInput.
int RunGuarded(const std::function<int()>& command);

// Makes std::terminate (an exception escaping a worker thread or a noexcept function) print the
// same one line, remove the registered temporary files (core/base/temp_files.h) and exit with
// kExitInvalidInput instead of aborting.
void InstallTerminateGuard();

}  // namespace meshplan::tools
