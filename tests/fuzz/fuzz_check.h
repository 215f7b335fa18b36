// What every fuzz target checks besides the sanitizers: a failed parse is one line of text, and
// each target's own properties. A violated check aborts, which libFuzzer reports as a crash with
// the input that caused it.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/base/escape.h"
#include "core/base/status.h"

namespace meshplan::fuzz {

inline void Check(bool condition, const char* what) {
  if (condition) return;
  std::fprintf(stderr, "fuzz check failed: %s\n", what);
  std::abort();
}

// An error from a parser: invalid input (not an internal error) with a message that names the
// problem, which the CLI prints as one line once escaped (EscapeControlBytes).
inline void CheckOneLine(const Status& status) {
  Check(!status.ok(), "an error status that is ok");
  Check(status.code() != ErrorCode::kInternal, "an internal error for bad input");
  Check(!status.message().empty(), "an empty error message");
  Check(EscapeControlBytes(status.message()).find('\n') == std::string::npos,
        "a message that is not one line");
}

}  // namespace meshplan::fuzz
