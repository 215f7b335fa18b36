// Issue 48: Ctrl-C in a sweep keeps the rows of the points it finished, and says so.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "tests/tools/cli_fixture.h"

namespace meshplan {
namespace {

using SweepInterrupt = testing::CliFixture;

TEST_F(SweepInterrupt, CtrlCKeepsTheFinishedPointsRowsAndSaysSo) {
  const std::string csv = (dir_ / "rows.csv").string(), err = (dir_ / "stderr").string();
  // 12 GPU counts x 9 lengths: minutes of planning, far more than the second it runs here.
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const int fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 2);
    ::execl(MESHPLAN_BINARY, MESHPLAN_BINARY, "sweep", "--gpus", "8..16384", "--seq", "64K..16M",
            "--format", "csv", "-o", csv.c_str(), static_cast<char*>(nullptr));
    std::_Exit(127);
  }
  // Interrupt once the first point is done (its progress line), or after 20 s at the latest.
  for (int i = 0; i < 200 && Read(err).find("point 1/") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ::kill(child, SIGINT);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 130);
  const std::string text = Read(err);
  const std::string said = "meshplan: sweep: interrupted (Ctrl-C) after ";
  const size_t at = text.find(said);
  ASSERT_NE(at, std::string::npos) << text;
  const long done = std::strtol(text.c_str() + at + said.size(), nullptr, 10);
  EXPECT_NE(text.find(" of 108 points; the finished points' rows are in " + csv), std::string::npos)
      << text;
  // A header, then one row per scheme (9) of every point done.
  const std::string rows = Read(csv);
  const long lines = static_cast<long>(std::count(rows.begin(), rows.end(), '\n'));
  EXPECT_GE(done, 1) << text;
  EXPECT_EQ(lines, 1 + 9 * done) << rows;
}

}  // namespace
}  // namespace meshplan
