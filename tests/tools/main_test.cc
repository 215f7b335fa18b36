// Issue 17's cases for the process-wide setup in tools/main.cc: an interrupted writer leaves no
// temporary file, and the process still dies of the signal.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
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

// Issue 48 made the first Ctrl-C in a sweep a request to stop between points (its finished rows
// are written: tests/tools/sweep_interrupt_cli_test.cc); a second one ends it as before. Either
// way no partial or temporary file is left: dead of SIGINT, nothing; stopped (exit 130, when the
// two signals reach it as one), whole rows, 9 schemes a point.
TEST_F(Signals17, SweepInterruptedTwiceBySigintLeavesNoPartialFile) {
  const fs::path out = dir_ / "rows.csv";
  const pid_t pid =
      Start({"sweep", "--gpus", "8..8192:+8", "--seq", "64K..4M", "-q", "-o", out.string()});
  ASSERT_GT(pid, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ASSERT_EQ(::kill(pid, SIGINT), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ::kill(pid, SIGINT);  // may find it gone already
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_EQ(TempFilesIn(dir_), 0);
  if (WIFSIGNALED(status)) {
    EXPECT_EQ(WTERMSIG(status), SIGINT);
    EXPECT_FALSE(fs::exists(out));
    return;
  }
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130);
  const std::string rows = Read(out);
  const auto lines = std::count(rows.begin(), rows.end(), '\n');
  EXPECT_EQ((lines - 1) % 9, 0) << rows;
}

TEST_F(Signals17, SweepInterruptedBySigtermLeavesNoPartialFile) {
  InterruptASweep(dir_, SIGTERM, std::chrono::milliseconds(500));
}

}  // namespace
}  // namespace meshplan
