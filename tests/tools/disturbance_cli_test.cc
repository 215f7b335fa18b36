// Issue 48: `meshplan execute` on a CPU says when other processes took the machine during its
// timed runs, in one line and in JSON, instead of showing errors as if they were the model's.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "tests/testing/foreign_load.h"
#include "tests/tools/cli_fixture.h"

namespace meshplan {
namespace {

using Disturbance = testing::CliFixture;

// Busy-loop processes for the life of the object.
class BusyLoops {
 public:
  explicit BusyLoops(int n) {
    for (int i = 0; i < n; ++i) {
      const pid_t pid = fork();
      if (pid == 0) {
        volatile unsigned spin = 0;
        for (;;) spin = spin + 1;
      }
      if (pid > 0) pids_.push_back(pid);
    }
  }
  ~BusyLoops() {
    for (pid_t pid : pids_) kill(pid, SIGKILL);
    for (pid_t pid : pids_) waitpid(pid, nullptr, 0);
  }
  size_t started() const { return pids_.size(); }

 private:
  std::vector<pid_t> pids_;
};

TEST_F(Disturbance, ExecuteBesideBusyLoopsSaysSoAndShowsNoErrors) {
  const std::string plan = MakeFourRankPlan();
  testing::CliResult text, json;
  {
    // Two busy loops take at least one core whatever else runs (this process waits meanwhile).
    const BusyLoops loops(2);
    ASSERT_EQ(loops.started(), 2u);
    text = Run("execute " + plan + " --repeat 3 -q");
    json = Run("execute " + plan + " --repeat 3 -q --format json");
  }
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("\ndisturbed: other processes used "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("rerun on a quiet machine\n"), std::string::npos) << text.out;
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_NE(json.out.find("\"disturbance\":\"other processes used "), std::string::npos)
      << json.out;
  EXPECT_NE(json.out.find("\"times_comparable\":false"), std::string::npos) << json.out;
}

TEST_F(Disturbance, AQuietRunSaysNothing) {
  const std::string plan = MakeFourRankPlan();
  testing::CliResult r;
  // The command's own CPU time counts as this process's (a reaped child), so this reads what
  // others took around the whole command.
  const double others = testing::ForeignCores([&] { r = Run("execute " + plan + " --repeat 3"); });
  ASSERT_EQ(r.exit_code, 0) << r.err;
  if (others > 0.1) GTEST_SKIP() << "other processes used " << others << " cores meanwhile";
  EXPECT_EQ(r.out.find("disturbed:"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace meshplan
