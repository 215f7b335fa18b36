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

namespace meshplan {
namespace {

using ReplayMemory49 = testing::CliFixture;

// Issue 49: a striped Mesh plan's ranks are not images of each other, so once the symmetry check
// fails every rank's program is kept: the projection counts all 256 of them (about 87 KiB each
// here, 21.7 MiB in all) and 16M refuses it. Before, it kept projecting one class's worth and
// replayed past the limit (at 16384 ranks: 6-8 GB against --max-memory 256M, then out of memory).
TEST_F(ReplayMemory49, StripedMeshReplayPastTheLimitIsRefusedOnceSymmetryFails) {
  ASSERT_EQ(Run("topo new --gpu h100-sxm5 --nodes 32 --gpus-per-node 8 --nic-gbps 400 -q -o " +
                (dir_ / "c256.toml").string())
                .exit_code,
            0);
  const std::string plan = Write("striped.toml", R"(schema_version = 1
[workload]
batch = 1
seq = 1048576
heads = 64
kv_heads = 8
head_dim = 128
dtype = "bf16"
partial_dtype = "fp32"
mask = "causal"
pass = "fwd+bwd"
[topology]
name = "h100-sxm5-32x8"
gpus = 256
[scheme]
name = "mesh"
layout = "striped"
tile_a = 32
tile_b = 8
cache_forward = true
reduce_chain = "owner-last"
placement = ["kv", "q"]
)");
  const std::string cluster = " -t " + (dir_ / "c256.toml").string();
  const testing::CliResult r = Run("simulate " + plan + cluster + " --max-memory 16M -q");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("256 ranks' programs"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("symmetry classes off"), std::string::npos) << r.err;
  EXPECT_EQ(Run("simulate " + plan + cluster + " --max-memory 1G -q").exit_code, 0);
}

// Issue 49: a replay whose expansion alone would run for minutes is refused as soon as its first
// rank's program is seen (the ops projected over every rank it expands), not left running: here
// the limit is set below the four-rank plan's own ops. With --no-symmetry every rank is expanded;
// with the symmetry proven from the plan's structure (Mesh, zigzag causal: one class of 4 on this
// non-blocking cluster) only the representative and its images under the generators are: rank 0
// and, q step 1 of a and kv step 1 of b, ranks 1 (or none when a = 1) and a (or none when b = 1):
// 2 or 3 ranks, fewer than 4.
TEST_F(ReplayMemory49, AReplayThatWouldExpandPastMaxOpsIsRefusedAtOnce) {
  const std::string plan = MakeFourRankPlan();
  const testing::CliResult r = Run("simulate " + plan + " --max-ops 10 --no-symmetry -q");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("replaying this plan expands about "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(4 ranks' programs of about "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("more than the limit of 10 "), std::string::npos) << r.err;
  const testing::CliResult proven = Run("simulate " + plan + " --max-ops 10 -q");
  EXPECT_EQ(proven.exit_code, 2) << proven.out;
  EXPECT_TRUE(proven.err.find("(2 ranks' programs of about ") != std::string::npos ||
              proven.err.find("(3 ranks' programs of about ") != std::string::npos)
      << proven.err;
  EXPECT_EQ(Run("simulate " + plan + " -q").exit_code, 0);  // under the default
  ExpectRefusedWith("simulate " + plan + " --max-ops many", {"--max-ops", "many"});
}

}  // namespace
}  // namespace meshplan
