// Issue 33: `simulate` and `sweep --simulate` check the host memory a replay needs against
// --max-memory (default: the memory available now) before the replay allocates it.
#include <gtest/gtest.h>

#include <string>

#include "tests/tools/cli_fixture.h"

namespace meshplan {
namespace {

using ReplayMemory33 = testing::CliFixture;

TEST_F(ReplayMemory33, SimulateRefusesAReplayPastMaxMemoryWithOneLine) {
  const std::string plan = MakeFourRankPlan();
  // Four ranks' programs of hundreds of 72-byte ops need more than 1 KiB.
  const testing::CliResult r = Run("simulate " + plan + " --no-symmetry --max-memory 1K");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err.rfind("meshplan: error: " + plan + ": replaying this plan needs about ", 0), 0u)
      << r.err;
  EXPECT_NE(r.err.find("(--max-memory 1K)"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  // Under the default (the memory available now) and under 1G the same plan replays.
  EXPECT_EQ(Run("simulate " + plan + " -q").exit_code, 0);
  EXPECT_EQ(Run("simulate " + plan + " -q --max-memory 1G").exit_code, 0);
  ExpectRefusedWith("simulate " + plan + " --max-memory lots", {"--max-memory", "lots"});
}

TEST_F(ReplayMemory33, SweepTakesMaxMemoryOnlyWithSimulate) {
  const std::string topology = WriteFourGpuTopology();
  ExpectRefusedWith("sweep -t " + topology + " --seq 4K --max-memory 1G",
                    {"--max-memory", "--simulate"});
  const testing::CliResult r =
      Run("sweep -t " + topology + " --seq 4K --schemes ring --simulate -q --max-memory 1K");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("replaying this plan needs about "), std::string::npos) << r.err;
  EXPECT_EQ(Run("sweep -t " + topology + " --seq 4K --schemes ring --simulate -q --max-memory 1G")
                .exit_code,
            0);
}

}  // namespace
}  // namespace meshplan
