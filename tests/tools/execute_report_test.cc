// Issue 17's case for the end of `meshplan execute` (tools/execute_report.cc): a failed run into a
// directory that holds an earlier run's outputs must not leave them looking like this run's.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/tools/cli_fixture.h"

namespace meshplan {
namespace {

namespace fs = std::filesystem;
using ExecuteOutputs17 = testing::CliFixture;

TEST_F(ExecuteOutputs17, AFailedRunRemovesTheOutputsOfAnEarlierRun) {
  const std::string plan = MakeFourRankPlan();
  const fs::path out = dir_ / "out";
  fs::create_directories(out);
  for (const char* name : {"o.npy", "lse.npy", "dq.npy"})
    Write("out/" + std::string(name), "earlier run");
  Write("out/notes.txt", "not an output");
  const testing::CliResult r =
      Run("execute " + plan + " --inject-fail 2:3 --outputs " + out.string());
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.err.rfind("meshplan: error: run failed: rank 2 op 3", 0), 0u) << r.err;
  // One line, ending with what was removed (in the order o, lse, dq, dk, dv).
  const std::string tail =
      "; removed o.npy, lse.npy, dq.npy of an earlier run from " + out.string() + "\n";
  ASSERT_GE(r.err.size(), tail.size());
  EXPECT_EQ(r.err.substr(r.err.size() - tail.size()), tail) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_FALSE(fs::exists(out / "o.npy"));
  EXPECT_FALSE(fs::exists(out / "lse.npy"));
  EXPECT_FALSE(fs::exists(out / "dq.npy"));
  EXPECT_TRUE(fs::exists(out / "notes.txt"));  // only the files a run writes
}

TEST_F(ExecuteOutputs17, AFlagErrorLeavesTheDirectoryAlone) {
  // Nothing ran: the earlier outputs are not this run's stale ones, and stay.
  const std::string plan = MakeFourRankPlan();
  const fs::path out = dir_ / "out";
  fs::create_directories(out);
  Write("out/o.npy", "earlier run");
  ExpectRefused("execute " + plan + " --inject-fail 9:0 --outputs " + out.string(),
                "--inject-fail: '9:0' is not RANK:OP with 0 <= RANK < 4 and OP >= 0");
  EXPECT_TRUE(fs::exists(out / "o.npy"));
}

}  // namespace
}  // namespace meshplan
