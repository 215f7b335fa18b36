// The replay's guards (simulator/simulate.cc): a schedule whose ops would end past the 2^62 ns
// horizon fails with an error instead of overflowing simulated time.
#include "simulator/simulate.h"

#include <gtest/gtest.h>

namespace meshplan::sim {
namespace {

TEST(SimulateTest, AnOpEndingPastTheHorizonFailsInsteadOfOverflowing) {
  // One GPU at 1e-6 TFLOP/s (1e6 FLOP/s) x efficiency 0.5: 1e30 FLOPs take 2e24 s = 2e33 ns,
  // far past 2^62 ns (4.6e18).
  Topology t;
  t.name = "slow";
  t.source = "test";
  t.gpu.model = "TestGPU";
  t.gpu.memory_bytes = 80e9;
  t.gpu.hbm_bytes_per_s = 2e12;
  t.gpu.peak_tflops = {{DType::kBf16, 1e-6}};
  t.gpu.attention_efficiency = {{1, 0.5}};
  t.levels.push_back({"nvlink", LinkKind::kSwitch, 1, 100e9, 1e-6, 1.0, {}});
  ASSERT_TRUE(t.Validate().ok()) << t.Validate().message();
  Schedule s;
  s.num_ranks = 1;
  s.layout = ShardLayout{Layout::kContiguous, 1024, 1, 1};
  s.ranks.resize(1);
  Op compute;
  compute.kind = OpKind::kCompute;
  compute.stream = StreamId::kCompute;
  compute.flops = 1e30;
  s.ranks[0].Add(compute);
  auto r = Simulate(s, t, {0}, DType::kBf16);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "the replay runs past the simulator's horizon of 2^62 ns (146 years)");
}

}  // namespace
}  // namespace meshplan::sim
