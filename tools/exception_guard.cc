#include "tools/exception_guard.h"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>
#include <stdexcept>
#include <string>
#include <system_error>

#include "core/base/escape.h"
#include "core/base/temp_files.h"
#include "tools/cli_common.h"

namespace meshplan::tools {
namespace {

// The one line for the exception in flight (REQUIRES: called inside a catch block or a terminate
// handler with a current exception).
std::string DescribeCurrentException() {
  try {
    throw;
  } catch (const std::bad_alloc&) {
    return "out of memory (std::bad_alloc): the workload or plan needs more memory than this "
           "machine can give";
  } catch (const std::length_error& e) {
    return "a size is too large to allocate (std::length_error: " + std::string(e.what()) + ")";
  } catch (const std::system_error& e) {
    // std::thread's constructor under an address-space limit (ulimit -v) or a thread limit: a
    // thread's stack could not be reserved (issue 49).
    if (e.code() == std::errc::resource_unavailable_try_again ||
        e.code() == std::errc::not_enough_memory) {
      return "out of memory: could not start a thread (" + std::string(e.what()) +
             "): the run needs more memory or threads than this machine or its limits (ulimit "
             "-v, ulimit -u) give";
    }
    return "unexpected failure: " + std::string(e.what());
  } catch (const std::exception& e) {
    return "unexpected failure: " + std::string(e.what());
  } catch (...) {
    return "unexpected failure (an exception of unknown type)";
  }
}

void Print(const std::string& message) {
  std::fprintf(stderr, "meshplan: error: %s\n", EscapeControlBytes(message).c_str());
  std::fflush(stderr);
}

[[noreturn]] void OnTerminate() {
  RemoveRegisteredTempFiles();
  if (std::current_exception()) {
    Print(DescribeCurrentException());
  } else {
    Print("unexpected failure (std::terminate without an exception)");
  }
  std::_Exit(kExitInvalidInput);
}

}  // namespace

int RunGuarded(const std::function<int()>& command) {
  try {
    return command();
  } catch (...) {
    Print(DescribeCurrentException());
    return kExitInvalidInput;
  }
}

void InstallTerminateGuard() { std::set_terminate(OnTerminate); }

}  // namespace meshplan::tools
