// Issue 17's cases for the process-wide setup in tools/main.cc: an interrupted writer leaves no
// temporary file, and the process still dies of the signal.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "tests/tools/cli_fixture.h"

namespace meshplan {
namespace {

namespace fs = std::filesystem;
using Signals17 = testing::CliFixture;

// Starts `meshplan args...` with stdout and stderr to /dev/null; returns its pid.
pid_t Start(const std::vector<std::string>& args) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::vector<char*> argv;
    std::string binary = MESHPLAN_BINARY;
    argv.push_back(binary.data());
    std::vector<std::string> copies = args;
    for (std::string& a : copies) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::freopen("/dev/null", "w", stdout);
    std::freopen("/dev/null", "w", stderr);
    ::execv(MESHPLAN_BINARY, argv.data());
    ::_exit(127);
  }
  return pid;
}

int TempFilesIn(const fs::path& dir) {
  int n = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().filename().string().find(".tmp.") != std::string::npos) ++n;
  }
  return n;
}

// A sweep of thousands of points (minutes), interrupted after `delay`.
void InterruptASweep(const fs::path& dir, int signal_number, std::chrono::milliseconds delay) {
  const fs::path out = dir / "rows.csv";
  const pid_t pid =
      Start({"sweep", "--gpus", "8..8192:+8", "--seq", "64K..4M", "-q", "-o", out.string()});
  ASSERT_GT(pid, 0);
  std::this_thread::sleep_for(delay);
  ASSERT_EQ(::kill(pid, signal_number), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status))
      << "exit status " << (WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  EXPECT_EQ(WTERMSIG(status), signal_number);
  EXPECT_EQ(TempFilesIn(dir), 0);
  EXPECT_FALSE(fs::exists(out));  // interrupted before its rows were complete: no output at all
}

TEST_F(Signals17, SweepInterruptedBySigintLeavesNoPartialFile) {
  InterruptASweep(dir_, SIGINT, std::chrono::milliseconds(500));
}

TEST_F(Signals17, SweepInterruptedBySigtermLeavesNoPartialFile) {
  InterruptASweep(dir_, SIGTERM, std::chrono::milliseconds(500));
}

}  // namespace
}  // namespace meshplan
