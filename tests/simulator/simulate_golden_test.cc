// Golden timings of the simulator, with the arithmetic written out. Time is integer nanoseconds.
#include <gtest/gtest.h>

#include "core/cost/kernel_time.h"
#include "planner/schemes/registry.h"
#include "planner/strategy.h"
#include "simulator/simulate.h"
#include "tests/simulator/golden_helpers.h"

namespace meshplan::sim {
namespace {

// `gpus` GPUs on one switch: 100 GB/s per direction (100 bytes/ns), 2 us per message.
Topology OneSwitch(int64_t gpus, double gbps = 100, double latency_us = 2) {
  Topology t = testing::TestGpuCluster("switch");
  t.levels.push_back(
      {"nvlink", LinkKind::kSwitch, gpus, gbps * 1e9, latency_us * 1e-6, 1.0, {}, {}});
  return t;
}

using testing::Empty;
using testing::Identity;
using testing::Recv;
using testing::Send;

TEST(SimulateGolden, OneTransferIsLatencyPlusBytesOverBandwidth) {
  // 1e6 bytes at 100 bytes/ns after 2000 ns of latency: 2000 + 10000 = 12000 ns.
  Schedule s = Empty(2);
  s.ranks[0].Add(Send(1, 1'000'000));
  s.ranks[1].Add(Recv(0, 1'000'000));
  auto r = Simulate(s, OneSwitch(2), Identity(2), DType::kBf16);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_DOUBLE_EQ(r->total_s, 12e-6);
  EXPECT_EQ(r->flows, 1);
  EXPECT_DOUBLE_EQ(r->levels[0].bytes, 1e6);
}

TEST(SimulateGolden, TwoFlowsIntoOneNicTakeTwiceAsLong) {
  // Ranks 0 and 1 send 1e6 bytes each to rank 2 at once: rank 2's ingress (100 bytes/ns) is
  // shared fairly, 50 bytes/ns each: 2000 + 1e6/50 = 22000 ns for both.
  Schedule s = Empty(3);
  s.ranks[0].Add(Send(2, 1'000'000));
  s.ranks[1].Add(Send(2, 1'000'000));
  s.ranks[2].Add(Recv(0, 1'000'000));
  s.ranks[2].Add(Recv(1, 1'000'000));
  auto r = Simulate(s, OneSwitch(3), Identity(3), DType::kBf16);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_DOUBLE_EQ(r->total_s, 22e-6);
  // The same two flows from one sender to two receivers share its egress instead: also 22 us
  // (the second send runs on the collective stream so both are in flight together).
  Schedule t = Empty(3);
  t.ranks[0].Add(Send(1, 1'000'000));
  Op second = Send(2, 1'000'000);
  second.stream = StreamId::kCollective;
  t.ranks[0].Add(second);
  t.ranks[1].Add(Recv(0, 1'000'000));
  t.ranks[2].Add(Recv(0, 1'000'000));
  auto q = Simulate(t, OneSwitch(3), Identity(3), DType::kBf16);
  ASSERT_TRUE(q.ok()) << q.status().message();
  EXPECT_DOUBLE_EQ(q->total_s, 22e-6);
}

TEST(SimulateGolden, RingAllGatherOnASwitchMatchesTheAlphaBetaFormula) {
  // p = 8 ranks, n = 8e6 bytes gathered (1e6 per rank): (p-1)(alpha + n/(p bw))
  // = 7 * (2000 + 1e6/100) ns = 84000 ns.
  const int64_t p = 8;
  const Schedule s = testing::AllGatherSchedule(p, 1'000'000);
  auto r = Simulate(s, OneSwitch(p), Identity(p), DType::kBf16);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const double formula = 7 * (2e-6 + 1e6 / 100e9);
  EXPECT_NEAR(r->total_s, formula, 0.01 * formula);
  EXPECT_EQ(r->flows, p * (p - 1));
}

TEST(SimulateGolden, ComputeOnlyScheduleTakesTheSumOfItsBlocks) {
  // Three blocks on one rank, one compute stream: their kernel times add up.
  Topology t = OneSwitch(1);
  t.gpu.launch_overhead_s = 3e-6;
  Schedule s = Empty(1);
  double expected = 0;
  uint32_t previous = 0;
  for (int i = 0; i < 3; ++i) {
    Op c;
    c.kind = OpKind::kCompute;
    c.q_shard = 0;
    c.kv_shard = 0;
    c.head_count = 1;
    c.flops = 1e12 * (i + 1);  // 1, 2, 3 TFLOP at 500 TFLOP/s: 2, 4, 6 ms, + 3 us launch each
    expected += KernelSeconds(t.gpu, DType::kBf16, 128, c.flops, KernelShape{1024, 0}, 1);
    previous = i == 0 ? s.ranks[0].Add(c) : s.ranks[0].Add(c, {previous});
  }
  auto r = Simulate(s, t, Identity(1), DType::kBf16);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_NEAR(r->total_s, 12e-3 + 9e-6, 1e-9);
  EXPECT_NEAR(r->total_s, expected, 1e-9);
  EXPECT_NEAR(r->ranks[0].compute_s, expected, 1e-9);
}

// Ring-Attention forward on an uncontended switch: per step max(compute, transfer) after a
// first compute-only step: c + (P-1) max(c, t), with t = alpha + |KV| / bw.
TEST(SimulateGolden, RingForwardMatchesThePipelineFormula) {
  for (double gbps : {1000.0, 5.0}) {  // compute-bound, then transfer-bound
    const int64_t p = 4;
    const Topology t = OneSwitch(p, gbps, 2);
    Workload w;
    w.seq_len = 1 << 16;
    w.q_heads = 8;
    w.kv_heads = 8;
    w.head_dim = 64;
    w.mask = Mask::Full();
    w.pass = Pass::kForward;
    const planner::PlanContext ctx(w, t);
    SchemeParams params;
    params.scheme = Scheme("ring");
    params.layout = Layout::kContiguous;
    params.ring = p;
    params.placement = {"cp"};
    auto schedule = planner::MakeStrategy(Scheme("ring"))->Expand(ctx, params);
    ASSERT_TRUE(schedule.ok()) << schedule.status().message();
    auto r = Simulate(*schedule, t, Identity(p), DType::kBf16);
    ASSERT_TRUE(r.ok()) << r.status().message();
    const double n = double(w.seq_len) / p;
    const double c = 4.0 * n * n * w.q_heads * w.head_dim / (1000e12 * 0.5);  // one block
    const double kv = 2.0 * w.kv_heads * n * w.head_dim * 2;                  // K+V, bf16
    const double transfer = 2e-6 + kv / (gbps * 1e9);
    const double formula = c + (p - 1) * std::max(c, transfer);
    EXPECT_NEAR(r->total_s, formula, 0.02 * formula) << gbps << " GB/s";
  }
}

TEST(SimulateGolden, MismatchedTopologyAndDeadlockAreErrors) {
  Schedule s = Empty(2);
  s.ranks[0].Add(Recv(1, 10));  // both ranks receive first and nobody sends
  s.ranks[1].Add(Recv(0, 10));
  auto r = Simulate(s, OneSwitch(2), Identity(2), DType::kBf16);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("deadlock"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("waits for a message from rank 1"), std::string::npos);
  auto wrong = Simulate(s, OneSwitch(4), Identity(2), DType::kBf16);
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("4 GPUs"), std::string::npos) << wrong.status().message();
  auto dtype = Simulate(s, OneSwitch(2), Identity(2), DType::kFp8);
  ASSERT_FALSE(dtype.ok());
  EXPECT_NE(dtype.status().message().find("fp8"), std::string::npos);
}

}  // namespace
}  // namespace meshplan::sim
