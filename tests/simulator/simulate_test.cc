// The replay's guards (simulator/simulate.cc): a schedule whose ops would end past the 2^62 ns
// horizon fails with an error instead of overflowing simulated time.
#include "simulator/simulate.h"

#include <gtest/gtest.h>

#include <vector>

namespace meshplan::sim {
namespace {

Topology TwoGpus() {
  Topology t;
  t.name = "two";
  t.source = "test";
  t.gpu.model = "TestGPU";
  t.gpu.memory_bytes = 80e9;
  t.gpu.hbm_bytes_per_s = 2e12;
  t.gpu.peak_tflops = {{DType::kBf16, 1.0}};
  t.gpu.attention_efficiency = {{1, 0.5}};
  t.levels.push_back({"nvlink", LinkKind::kSwitch, 2, 100e9, 1e-6, 1.0, {}, {}});
  return t;
}

// Rank 0 runs `blocks` compute ops one after another, then sends to rank 1 once all of them are
// done: with every block as a dep of the send, or with the last block only.
Schedule ManyDepsSchedule(uint32_t blocks, bool all_deps) {
  Schedule s;
  s.num_ranks = 2;
  s.layout = ShardLayout{Layout::kContiguous, 1024, 1, 1};
  s.ranks.resize(2);
  std::vector<uint32_t> deps;
  for (uint32_t b = 0; b < blocks; ++b) {
    Op compute;
    compute.kind = OpKind::kCompute;
    compute.stream = StreamId::kCompute;
    compute.flops = 1e6 + b;  // distinct, so no two orders time alike
    deps.push_back(s.ranks[0].Add(compute));
  }
  if (!all_deps) deps.erase(deps.begin(), deps.end() - 1);
  Op send;
  send.kind = OpKind::kSend;
  send.stream = StreamId::kSend;
  send.peer = 1;
  send.bytes = 1 << 20;
  s.ranks[0].Add(send, deps);
  Op recv;
  recv.kind = OpKind::kRecv;
  recv.stream = StreamId::kRecv;
  recv.peer = 0;
  recv.bytes = 1 << 20;
  s.ranks[1].Add(recv);
  return s;
}

// The replay counts an op's pending deps in 2 bytes (replay_program.h, DepCount) and an op with
// kManyDeps (65535) deps or more in its OpState: around that bound, a send that waits for every
// block still starts exactly when the last block ends, as when it waits for the last one only.
TEST(SimulateTest, AnOpWithTensOfThousandsOfDepsStartsAfterTheLast) {
  const Topology t = TwoGpus();
  ASSERT_TRUE(t.Validate().ok()) << t.Validate().message();
  SimOptions options;
  options.coalesce_compute = false;
  for (uint32_t blocks : {65534u, 65535u, 65536u, 70000u}) {
    SCOPED_TRACE(blocks);
    auto all = Simulate(ManyDepsSchedule(blocks, true), t, {0, 1}, DType::kBf16, options);
    auto last = Simulate(ManyDepsSchedule(blocks, false), t, {0, 1}, DType::kBf16, options);
    ASSERT_TRUE(all.ok()) << all.status().message();
    ASSERT_TRUE(last.ok()) << last.status().message();
    EXPECT_EQ(all->op_times[0][blocks].start, all->op_times[0][blocks - 1].end);
    ASSERT_EQ(all->op_times.size(), last->op_times.size());
    for (size_t r = 0; r < all->op_times.size(); ++r) {
      ASSERT_EQ(all->op_times[r].size(), last->op_times[r].size());
      for (size_t i = 0; i < all->op_times[r].size(); ++i) {
        EXPECT_EQ(all->op_times[r][i].start, last->op_times[r][i].start)
            << "rank " << r << " op " << i;
        EXPECT_EQ(all->op_times[r][i].end, last->op_times[r][i].end) << "rank " << r << " op " << i;
      }
    }
    EXPECT_EQ(all->total_s, last->total_s);
  }
}

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
  t.levels.push_back({"nvlink", LinkKind::kSwitch, 1, 100e9, 1e-6, 1.0, {}, {}});
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
  EXPECT_EQ(r.status().message(),
            "the replay runs past the simulator's horizon of 2^62 ns (146 years)");
}

}  // namespace
}  // namespace meshplan::sim
