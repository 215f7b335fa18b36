// Issue 33: what a command prints must reach standard output; a full disk (/dev/full) or a closed
// stdout is one error line and a non-zero exit, for every command.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <string>

#include "tests/tools/cli_fixture.h"

namespace meshplan {
namespace {

class StdoutCheck : public testing::CliFixture {
 protected:
  // Runs `meshplan ARGS` with stdout sent to `target` (shell redirection text), stderr captured.
  testing::CliResult RunTo(const std::string& args, const std::string& target) {
    const std::string err = (dir_ / "stderr").string();
    const std::string cmd =
        std::string(MESHPLAN_BINARY) + " " + args + " " + target + " 2>" + err + " </dev/null";
    const int status = std::system(cmd.c_str());
    testing::CliResult r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.err = Read(err);
    return r;
  }
};

TEST_F(StdoutCheck, AFullDiskOrAClosedStdoutIsAnErrorForEveryCommand) {
  for (const char* args :
       {"topo list", "plan -t dgx-h100-1node --seq 64K -q", "--help", "--version",
        "fit -t dgx-h100-1node -q", "sweep -t dgx-h100-1node --seq 64K --schemes ring -q",
        "plan --list-schemes"}) {
    for (const char* target : {">/dev/full", ">&-"}) {
      const testing::CliResult r = RunTo(args, target);
      EXPECT_NE(r.exit_code, 0) << args << " " << target;
      EXPECT_NE(r.exit_code, -1) << args << " " << target << ": not a crash";
      EXPECT_NE(r.err.find("meshplan: error: writing to standard output failed"), std::string::npos)
          << args << " " << target << "\n"
          << r.err;
    }
  }
  // The same commands to a working stdout succeed.
  EXPECT_EQ(RunTo("topo list", ">/dev/null").exit_code, 0);
}

TEST_F(StdoutCheck, ABadOutPathIsRefusedBeforeAnyWorkWithExit2) {
  // Issue 33: `plan --out DIR` ran the whole search and printed the table, then exited 1.
  for (const std::string& args : {std::string("plan -t dgx-h100-1node --seq 64K -q --out "),
                                  std::string("sweep -t dgx-h100-1node --seq 64K -q -o ")}) {
    const testing::CliResult r = Run(args + dir_.string());
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    EXPECT_TRUE(r.out.empty()) << args << ": nothing ran\n" << r.out.substr(0, 200);
    EXPECT_NE(r.err.find("--out: " + dir_.string() + ": is a directory, expected a file to write"),
              std::string::npos)
        << r.err;
  }
}

TEST_F(StdoutCheck, AnEmptyFlagValueIsRefusedNotReadAsZero) {
  // Issue 33: empty strings for --reserve-gib, --top and --max-memory were accepted.
  for (const std::string& args :
       {std::string("plan --reserve-gib '' -q"), std::string("plan --top '' -q"),
        std::string("plan --top= -q"), std::string("execute p.toml --max-memory ''")}) {
    const testing::CliResult r = Run(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    EXPECT_NE(r.err.find(": an empty value"), std::string::npos) << args << "\n" << r.err;
  }
}

TEST_F(StdoutCheck, ATimeoutBelowAMillisecondIsRefused) {
  // Issue 33: --timeout-s 5e-324 was accepted (the deadline is kept in whole milliseconds).
  const std::string plan = (dir_ / "p.toml").string();
  ASSERT_EQ(Run("plan -t dgx-h100-4gpu --seq 256 --heads 4 --kv-heads 2 --head-dim 16 --schemes "
                "ring -q --out " +
                plan)
                .exit_code,
            0);
  ExpectRefused("execute " + plan + " --timeout-s 5e-324",
                "--timeout-s: must be a number of seconds in [0.001, 1e6]");
}

}  // namespace
}  // namespace meshplan
