// This binary run again as a child process: `calibrate --draws N` measures each draw in a process
// of its own, since a process is itself one draw of the machine's speed (docs/fidelity.md,
// "Draws").
#pragma once

#include <string>
#include <vector>

#include "core/base/status.h"

namespace meshplan::tools {

struct SelfCommandResult {
  int exit_code = 0;        // the child's exit status; 128 + N when signal N ended it
  std::string stdout_text;  // everything it wrote on stdout
};

// Runs /proc/self/exe with `args` (the arguments after the program name): its stdin and stderr are
// this process's, its stdout is returned. kIo when it cannot be started; a child that starts and
// fails is a result with its exit code (it has said why on stderr).
Result<SelfCommandResult> RunSelfCommand(const std::vector<std::string>& args);

}  // namespace meshplan::tools
