// Golden timings of the GPU kernel model's terms (issue 30) in the simulator, with the arithmetic
// written out: a ring step's partial merges, the kernel rate by head dim, a ring collective that
// leaves a node over the node's NICs.
#include <gtest/gtest.h>

#include "core/cost/kernel_time.h"
#include "simulator/simulate.h"
#include "simulator/simulation_timer.h"
#include "tests/planner/test_cluster.h"
#include "tests/simulator/golden_helpers.h"

namespace meshplan::sim {
namespace {

using testing::Empty;
using testing::Identity;

Op ComputeOp(double flops, int64_t partial_bytes) {
  Op c;
  c.kind = OpKind::kCompute;
  c.q_shard = 0;
  c.kv_shard = 0;
  c.head_count = 1;
  c.flops = flops;
  c.bytes = partial_bytes;
  return c;
}

Topology OneGpu() {
  Topology t = testing::TestGpuCluster("one");
  t.levels.push_back({"nvlink", LinkKind::kSwitch, 1, 100e9, 2e-6, 1.0, {}, {}});
  return t;
}

TEST(GpuKernelModelGolden, ARingStepsPartialsCrossHbmTheirPassesTimes) {
  // Two blocks of 1 TFLOP at 500 TFLOP/s (2 ms each); the second merges 1e9 bytes of partials
  // 12 times through 2e12 bytes/s of HBM: 12 * 1e9 / 2e12 = 6 ms. Total 2 + 2 + 6 = 10 ms.
  Topology t = OneGpu();
  t.gpu.ring_step_partial_passes = 12;
  Schedule s = Empty(1);
  const uint32_t first = s.ranks[0].Add(ComputeOp(1e12, 0));
  s.ranks[0].Add(ComputeOp(1e12, 1'000'000'000), {first});
  auto r = Simulate(s, t, Identity(1), DType::kBf16);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_NEAR(r->total_s, 10e-3, 1e-9);
  // Without passes the bytes cost nothing: 4 ms.
  t.gpu.ring_step_partial_passes = 0;
  auto bare = Simulate(s, t, Identity(1), DType::kBf16);
  ASSERT_TRUE(bare.ok());
  EXPECT_NEAR(bare->total_s, 4e-3, 1e-9);
}

TEST(GpuKernelModelGolden, ASlicedMergeCrossesHbmItsPassesMoreTimes) {
  // As above, and the second block's partials are merged through a slice: 2 more passes of 1e9
  // bytes through 2e12 bytes/s, 1 ms. Total 2 + 2 + 6 + 1 = 11 ms.
  Topology t = OneGpu();
  t.gpu.ring_step_partial_passes = 12;
  t.gpu.sliced_merge_passes = 2;
  Schedule s = Empty(1);
  const uint32_t first = s.ranks[0].Add(ComputeOp(1e12, 0));
  Op sliced = ComputeOp(1e12, 1'000'000'000);
  sliced.sliced_bytes = 1'000'000'000;
  s.ranks[0].Add(sliced, {first});
  auto r = Simulate(s, t, Identity(1), DType::kBf16);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_NEAR(r->total_s, 11e-3, 1e-9);
}

TEST(GpuKernelModelGolden, ASmallerHeadDimRunsAtTheCurvesRateTimesItsFactor) {
  // k = 64 FLOPs of other work per pair at d = 128: rate(d = 32) = rate(128) * (1 + 64/512) /
  // (1 + 64/128) = 0.75 of it. 1 TFLOP at 500 * 0.75 = 375 TFLOP/s: 1/375 s.
  Topology t = OneGpu();
  t.gpu.pair_overhead_flops = 64;
  t.gpu.efficiency_head_dim = 128;
  Schedule s = Empty(1);
  s.ranks[0].Add(ComputeOp(1e12, 0));
  SimOptions options;
  options.head_dim = 32;
  auto r = Simulate(s, t, Identity(1), DType::kBf16, options);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_NEAR(r->total_s, 1.0 / 375, 1e-9);
  options.head_dim = 128;  // the curve's own head dim: 1/500 s
  auto own = Simulate(s, t, Identity(1), DType::kBf16, options);
  ASSERT_TRUE(own.ok());
  EXPECT_NEAR(own->total_s, 1.0 / 500, 1e-9);
}

TEST(GpuKernelModelGolden, ARingAllGatherLeavingANodeUsesEveryNicOfTheNode) {
  // 2 nodes of 4 GPUs: NVLink 400 GB/s (1 us), IB 50 GB/s (5 us). All-gather over the 8 GPUs of
  // 1e6 bytes each: 7 ring steps. GPUs 3 and 7 send over IB, each step spread over the 4 NICs of
  // their node, so their own NIC carries 0.25e6 bytes a step: 7 x 0.25e6 = 1.75e6 bytes, 35 us at
  // 50 GB/s. The replay forwards each chunk as it arrives, so the IB link, the slowest, paces the
  // ring: at least its 35 us and one 5 us latency (40 us), at most the lock-step bound of 7 steps
  // of 5 us + 5 us (70 us). Unspread, the IB link alone would need 7 x 1e6 / 50 GB/s = 140 us.
  Topology t = testing::TestGpuCluster("two-nodes");
  t.levels.push_back({"nvlink", LinkKind::kSwitch, 4, 400e9, 1e-6, 1.0, {}, {}});
  t.levels.push_back({"ib", LinkKind::kFatTree, 2, 50e9, 5e-6, 1.0, {}, {}});
  const int64_t p = 8;
  const Schedule s = testing::AllGatherSchedule(p, 1'000'000);
  auto r = Simulate(s, t, Identity(p), DType::kBf16);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_GE(r->total_s, 40e-6);
  EXPECT_LE(r->total_s, 70e-6);
  // IB bytes: 2 crossing GPUs x 7 steps x 0.25e6.
  EXPECT_DOUBLE_EQ(r->levels[1].bytes, 3.5e6);
}

TEST(GpuKernelModelGolden, ARingPlanMergesAsThePlannerChargesIt) {
  // A compute-bound zigzag ring of 4 (tests/planner/patterns/ring_pass_test.cc works out the
  // numbers): each of its steps 1..3 merges 270,532,608 bytes of forward partials 12 times through
  // 3e12 bytes/s, 3.2464 ms in all; the replay's time grows by that, as the estimate's does.
  Topology t = meshplan::testing::SmallCluster(4, 1);
  const Workload w = meshplan::testing::ComputeBoundWorkload(Pass::kForward);
  const SchemeParams ring = meshplan::testing::ZigzagRing(4);
  auto bare = SimulatedSeconds(planner::PlanContext(w, t), ring);
  t.gpu.ring_step_partial_passes = 12;
  auto merged = SimulatedSeconds(planner::PlanContext(w, t), ring);
  ASSERT_TRUE(bare.ok() && merged.ok());
  EXPECT_NEAR(*merged - *bare, 3 * 12 * (268'435'456.0 + 2'097'152.0) / 3e12, 1e-8);
  // Striped: rank 0 holds a later shard at steps 1..3 and merges it through a slice, 2 more
  // passes each (0.54106 ms in all, what the estimate adds: ring_pass_test.cc); the ring waits
  // for it. The replay knows rank 0 had slack: its three strict blocks lack their diagonals,
  // 16,384 pairs each of 4 x 32 x 128 FLOPs, 3 x 16,384 x 16,384 / 5e14 = 1.6106 us less work
  // than rank 3, whose blocks all hold theirs and which set the time before. It grows by the
  // difference.
  SchemeParams striped = ring;
  striped.layout = Layout::kStriped;
  auto striped_bare = SimulatedSeconds(planner::PlanContext(w, t), striped);
  t.gpu.sliced_merge_passes = 2;
  auto striped_sliced = SimulatedSeconds(planner::PlanContext(w, t), striped);
  ASSERT_TRUE(striped_bare.ok() && striped_sliced.ok());
  EXPECT_NEAR(*striped_sliced - *striped_bare,
              3 * 2 * (268'435'456.0 + 2'097'152.0) / 3e12 - 3.0 * 16'384 * 16'384 / 5e14, 1e-8);
  auto zigzag_sliced = SimulatedSeconds(planner::PlanContext(w, t), ring);
  ASSERT_TRUE(zigzag_sliced.ok());
  EXPECT_NEAR(*zigzag_sliced, *merged, 1e-12);  // no strict diagonal in a zigzag ring
  t.gpu.sliced_merge_passes = 0;
  // The framework's 1.5 ms per call is added once to the forward's replay.
  t.framework.step_overhead_s = 1.5e-3;
  auto overhead = SimulatedSeconds(planner::PlanContext(w, t), ring);
  ASSERT_TRUE(overhead.ok());
  EXPECT_NEAR(*overhead - *merged, 1.5e-3, 1e-9);
}

}  // namespace
}  // namespace meshplan::sim
