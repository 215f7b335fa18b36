// MeasureDrawRange: the range the draws' own predictions take around the combined file's.
#include "capacity/draw_range.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "core/cluster/topology_toml.h"

namespace meshplan::capacity {
namespace {

// A calibrated machine of `ranks` ranks whose kernels run at `peak_tflops` at every block size;
// messages and merges as good as free, no lag, so that on one rank a plan's time is its kernels'
// and scales as 1 / peak exactly.
Topology Machine(int ranks, double peak_tflops) {
  char text[1024];
  std::snprintf(text, sizeof text, R"(name = "machine"
[gpu]
model = "CPU"
memory_GB = 16
hbm_GBps = 1e9
launch_overhead_us = 0
peak_tflops = { bf16 = %g, fp16 = %g, fp32 = %g }
attention_efficiency = [[128, 1], [4096, 1]]
efficiency_head_dim = 32
ranks_per_device = %d
concurrent_kernels = %d

[[level]]
name = "threads"
kind = "switch"
group_size = %d
bandwidth_GBps = 1e9
latency_us = 0
)",
                peak_tflops, peak_tflops, peak_tflops, ranks, ranks, ranks);
  auto t = ParseTopologyToml(text, "machine.toml");
  EXPECT_TRUE(t.ok()) << t.status().message();
  return t.ok() ? *t : Topology{};
}

DrawProbe Probe() {
  DrawProbe probe;
  probe.tokens_per_rank = 512;
  probe.head_dim = 32;
  return probe;
}

TEST(DrawRange, DrawsEqualToTheFileGiveNoRange) {
  const Topology t = Machine(2, 0.03);
  auto range = MeasureDrawRange({t, t, t}, t, Probe());
  ASSERT_TRUE(range.ok()) << range.status().message();
  EXPECT_DOUBLE_EQ(range->low, 1.0);
  EXPECT_DOUBLE_EQ(range->high, 1.0);
  EXPECT_GT(range->plans, 4);  // every scheme that runs on 2 ranks, 2 masks x 2 passes
}

TEST(DrawRange, OnOneRankTheRangeIsThePeaksRatio) {
  // One rank: every plan is its kernels alone, time = FLOPs / peak. Draws at half and twice the
  // combined file's peak predict 2x and 0.5x its time for every plan: the range [0.5, 2].
  const Topology combined = Machine(1, 0.02);
  auto range =
      MeasureDrawRange({Machine(1, 0.04), Machine(1, 0.02), Machine(1, 0.01)}, combined, Probe());
  ASSERT_TRUE(range.ok()) << range.status().message();
  EXPECT_DOUBLE_EQ(range->low, 0.5);
  EXPECT_DOUBLE_EQ(range->high, 2.0);
}

TEST(DrawRange, TheRangeAlwaysHoldsTheFilesOwnPrediction) {
  // Every draw slower than the file (1.25x its time and more): the low end is still 1, and the
  // high end is the slowest draw's 0.02 / 0.01 = 2 (one rank: exactly the peaks' ratio).
  const Topology combined = Machine(1, 0.02);
  auto range = MeasureDrawRange({Machine(1, 0.016), Machine(1, 0.01)}, combined, Probe());
  ASSERT_TRUE(range.ok()) << range.status().message();
  EXPECT_DOUBLE_EQ(range->low, 1.0);
  EXPECT_DOUBLE_EQ(range->high, 2.0);
}

TEST(DrawRange, RefusesNoDraws) {
  EXPECT_EQ(MeasureDrawRange({}, Machine(2, 0.03), Probe()).status().code(),
            ErrorCode::kInvalidInput);
}

}  // namespace
}  // namespace meshplan::capacity
