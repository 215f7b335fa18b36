// Peak memory per rank, derived by hand from the buffers each scheme holds (docs/planner-model.md).
#include <gtest/gtest.h>

#include "planner/schemes/registry.h"
#include "planner/strategy.h"
#include "tests/planner/test_cluster.h"

namespace meshplan::planner {
namespace {

// 2 x 4 GPUs; B = 1, S = 8192, Hq = 8, Hkv = 2, d = 64, bf16 with fp32 partials.
// Per rank: tokens n = 1024; X = n * d * 2 = 131072 bytes.
//   Q = 8X = 1 MiB, KV = 2*2*X = 0.5 MiB, Op = dQp = 2 MiB (fp32), dKVp = 1 MiB, L = n*8*4 = 32
//   KiB.
constexpr double kBytesPerMiB = 1024.0 * 1024.0;
constexpr double Q = 1 * kBytesPerMiB, KV = 0.5 * kBytesPerMiB, Op = 2 * kBytesPerMiB,
                 dQp = 2 * kBytesPerMiB, dKVp = 1 * kBytesPerMiB, L = 32 * 1024.0;

Workload MemoryWorkload(Pass pass) {
  Workload w;
  w.seq_len = 8192;
  w.q_heads = 8;
  w.kv_heads = 2;
  w.head_dim = 64;
  w.pass = pass;
  return w;
}

double Peak(const Workload& w, SchemeParams p) {
  const Topology t = testing::SmallCluster(4, 2);
  const PlanContext ctx(w, t);
  if (p.placement.empty()) p.placement = CanonicalPlacement(planner::RankDims(p));
  const Estimate e = MakeStrategy(p.scheme)->Evaluate(ctx, p);
  EXPECT_TRUE(e.valid) << e.reason;
  return e.peak_memory_bytes;
}

// Own tensors: forward Q, K+V, O, LSE; a backward adds dO, dQ, dK+dV and D.
constexpr double kBaseFwd = Q + KV + Q + L;
constexpr double kBaseFwdBwd = kBaseFwd + Q + Q + KV + L;

TEST(Memory, RingHoldsTwoKvBuffersAndAccumulators) {
  SchemeParams p;
  p.scheme = Scheme("ring");
  p.layout = Layout::kZigzag;
  p.ring = 8;
  // Forward: KV in use + KV arriving, fp32 O accumulator with its LSE.
  EXPECT_DOUBLE_EQ(Peak(MemoryWorkload(Pass::kForward), p), kBaseFwd + 2 * KV + Op + L);
  // fwd+bwd: the larger of the forward buffers and the backward's (2 KV + dK,dV in and out +
  // dQ accumulator) = max(1.5 MiB + 32 KiB, 1 + 2 + 2 MiB) = 5 MiB.
  EXPECT_DOUBLE_EQ(Peak(MemoryWorkload(Pass::kForwardBackward), p),
                   kBaseFwdBwd + 2 * KV + 2 * dKVp + dQp);
  // Cache: the 7 other KV shards stay from the forward; the backward moves no KV.
  p.cache_forward = true;
  EXPECT_DOUBLE_EQ(Peak(MemoryWorkload(Pass::kForwardBackward), p),
                   kBaseFwdBwd + 7 * KV + 2 * dKVp + dQp);
}

TEST(Memory, AllGatherHoldsTheWholeKv) {
  SchemeParams p;
  p.scheme = Scheme("allgather-kv");
  p.layout = Layout::kZigzag;
  p.ring = 8;
  // All 8 KV shards (own one in the base) and the O accumulator.
  EXPECT_DOUBLE_EQ(Peak(MemoryWorkload(Pass::kForward), p), kBaseFwd + 7 * KV + Op + L);
}

TEST(Memory, MeshCachesItsSlotsAndPartials) {
  SchemeParams p;
  p.scheme = Scheme("mesh");
  p.layout = Layout::kZigzag;
  p.tile_a = 2;
  p.tile_b = 4;
  // Forward: a-1 = 1 extra Q slot, b-1 = 3 extra KV slots, a+1 = 3 partial (O, LSE) buffers.
  EXPECT_DOUBLE_EQ(Peak(MemoryWorkload(Pass::kForward), p), kBaseFwd + Q + 3 * KV + 3 * (Op + L));
  // Backward only, no cache: per extra Q slot Q + dO + LSE + D; 3 KV slots; a+1 partial dQ and
  // b+1 partial dK,dV buffers.
  EXPECT_DOUBLE_EQ(Peak(MemoryWorkload(Pass::kBackward), p),
                   kBaseFwdBwd + (Q + Q + 2 * L) + 3 * KV + 3 * dQp + 5 * dKVp);
}

TEST(Memory, FitsComparesPeakPlusReserveWithTheGpu) {
  const Topology t = testing::SmallCluster(4, 2);
  const Workload w = MemoryWorkload(Pass::kForward);
  SchemeParams p;
  p.scheme = Scheme("ring");
  p.layout = Layout::kZigzag;
  p.ring = 8;
  p.placement = {"cp"};
  const double peak = kBaseFwd + 2 * KV + Op + L;
  const PlanContext just_fits(w, t, t.gpu.memory_bytes - peak);
  EXPECT_TRUE(MakeStrategy(Scheme("ring"))->Evaluate(just_fits, p).fits);
  const PlanContext one_byte_short(w, t, t.gpu.memory_bytes - peak + 1);
  EXPECT_FALSE(MakeStrategy(Scheme("ring"))->Evaluate(one_byte_short, p).fits);
}

}  // namespace
}  // namespace meshplan::planner
