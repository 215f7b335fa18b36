// The ring step's costs beyond the kernel (issue 30), worked out by hand on a tiny ring.
#include "planner/patterns/ring_pass.h"

#include <gtest/gtest.h>

#include "planner/evaluate_plan.h"
#include "planner/schemes/registry.h"
#include "tests/planner/test_cluster.h"

namespace meshplan::planner {
namespace {

// A compute-bound ring of 4 on one node (test_cluster.h): 64K tokens, 32 query heads of 128, fp32
// partials. A rank's forward partials: O is 32 heads x 16K tokens x 128 x 4 bytes = 268,435,456
// bytes and LSE 16K x 32 x 4 = 2,097,152: 270,532,608 bytes.
constexpr double kForwardPartialBytes = 268'435'456.0 + 2'097'152.0;

SchemeParams RingOf4() {
  SchemeParams p;
  p.scheme = Scheme("ring");
  p.layout = Layout::kZigzag;
  p.ring = 4;
  p.placement = {"cp"};
  return p;
}

double EstimateSeconds(const Topology& t, const Workload& w, const SchemeParams& p) {
  const PlanContext ctx(w, t);
  const Estimate e = EvaluatePlan(ctx, *MakeStrategy(p.scheme), p);
  EXPECT_TRUE(e.valid) << e.reason;
  return e.time_s;
}

TEST(RingStepPartials, BytesAreTheRanksPartials) {
  const Topology t = testing::SmallCluster(4, 1);
  const PlanContext ctx(testing::ComputeBoundWorkload(Pass::kForward), t);
  EXPECT_DOUBLE_EQ(RingStepPartialBytes(ctx, Phase::kForward), kForwardPartialBytes);
  // Backward: dQ (as O) and dK + dV of 8 KV heads: 2 x 8 x 16K x 128 x 4 = 134,217,728.
  EXPECT_DOUBLE_EQ(RingStepPartialBytes(ctx, Phase::kBackward), 268'435'456.0 + 134'217'728.0);
}

TEST(RingStepPartials, EveryStepButTheFirstMergesItsPartials) {
  // 12 passes through 3e12 bytes/s: 12 x 270,532,608 / 3e12 = 1.0821 ms per step; the ring's 4
  // steps merge 3 times, and the ring is compute-bound, so its time grows by 3.2464 ms.
  Topology t = testing::SmallCluster(4, 1);
  const Workload w = testing::ComputeBoundWorkload(Pass::kForward);
  const double bare = EstimateSeconds(t, w, RingOf4());
  t.gpu.ring_step_partial_passes = 12;
  const double merged = EstimateSeconds(t, w, RingOf4());
  EXPECT_NEAR(merged - bare, 3 * 12 * kForwardPartialBytes / 3e12, 1e-9);
}

TEST(SlicedMerge, AStripedCausalShardMeetsLaterShardsOnAStrictDiagonal) {
  // 16 tokens in 4 striped shards: shard 0 holds tokens 0, 4, 8, 12 and shard 1 tokens 1, 5, 9,
  // 13. Causal, query 0 sees none of shard 1's keys (its first row is empty) and query 4 sees key
  // 1: a strict diagonal. Against shard 0 (its own) query 0 sees key 0: not strict; shard 1's
  // queries against shard 0's keys: 1 sees 0, not strict.
  Workload w = testing::ComputeBoundWorkload(Pass::kForward);
  w.seq_len = 16;
  const Topology t = testing::SmallCluster(4, 1);
  const PlanContext ctx(w, t);
  const ShardLayout striped(Layout::kStriped, 16, 4, 1);
  EXPECT_EQ(ctx.counter.Count(0, 1, 1, 2), 0);  // query 0, key 1
  EXPECT_EQ(ctx.counter.Count(4, 5, 1, 2), 1);  // query 4, key 1
  EXPECT_TRUE(StrictDiagonalBlock(ctx, striped, Phase::kForward, 0, 1));
  EXPECT_TRUE(StrictDiagonalBlock(ctx, striped, Phase::kForward, 0, 3));
  EXPECT_FALSE(StrictDiagonalBlock(ctx, striped, Phase::kForward, 0, 0));
  EXPECT_FALSE(StrictDiagonalBlock(ctx, striped, Phase::kForward, 1, 0));
  // The backward's slices are accumulated in place (no copy), other layouts never slice, and a
  // full mask has no diagonal.
  EXPECT_FALSE(StrictDiagonalBlock(ctx, striped, Phase::kBackward, 0, 1));
  EXPECT_FALSE(
      StrictDiagonalBlock(ctx, ShardLayout(Layout::kZigzag, 16, 4, 1), Phase::kForward, 0, 1));
  Workload full = w;
  full.mask.kind = MaskKind::kFull;
  EXPECT_FALSE(StrictDiagonalBlock(PlanContext(full, t), striped, Phase::kForward, 0, 1));
}

TEST(SlicedMerge, EveryStepButTheFirstOfAStripedForwardCopiesItsSliceBack) {
  // Striped ring of 4, compute-bound: from step 1 on a rank holds a later shard (position 0 at
  // every step), and the step lasts as long as its merge: 2 more passes of 270,532,608 bytes
  // through 3e12 bytes/s, 0.18035 ms, at steps 1..3: 0.54106 ms in all, beside the 12 passes.
  Topology t = testing::SmallCluster(4, 1);
  t.gpu.ring_step_partial_passes = 12;
  SchemeParams striped = RingOf4();
  striped.layout = Layout::kStriped;
  const Workload fwd = testing::ComputeBoundWorkload(Pass::kForward);
  const double bare = EstimateSeconds(t, fwd, striped);
  t.gpu.sliced_merge_passes = 2;
  EXPECT_NEAR(EstimateSeconds(t, fwd, striped) - bare, 3 * 2 * kForwardPartialBytes / 3e12, 1e-9);
  // Zigzag has no strict diagonal, and the backward copies nothing back: no change.
  const double zigzag = EstimateSeconds(t, fwd, RingOf4());
  t.gpu.sliced_merge_passes = 0;
  EXPECT_DOUBLE_EQ(EstimateSeconds(t, fwd, RingOf4()), zigzag);
  const Workload bwd = testing::ComputeBoundWorkload(Pass::kBackward);
  const double bwd_bare = EstimateSeconds(t, bwd, striped);
  t.gpu.sliced_merge_passes = 2;
  EXPECT_DOUBLE_EQ(EstimateSeconds(t, bwd, striped), bwd_bare);
}

TEST(CutRows, ARingPaysItsDiagonalCutsAtTheKernelRate) {
  // Zigzag ring of 4 at 64K tokens: a rank's chunks are 8K tokens, and only each of its two chunks
  // against itself is cut, on 8191 rows each: 16,382 cut rows per rank. At 100 extra pairs per
  // cut row that is 1,638,200 pairs x 4 x 32 heads x 128 = 26,840,268,800 FLOPs more, at 1000 x
  // 0.5 TFLOP/s: 53.68 us. Every rank has the same work and the ring is compute-bound, so the
  // whole pass grows by exactly that.
  Topology t = testing::SmallCluster(4, 1);
  const Workload w = testing::ComputeBoundWorkload(Pass::kForward);
  const double bare = EstimateSeconds(t, w, RingOf4());
  t.gpu.cut_row_extra_pairs = 100;
  const double cut = EstimateSeconds(t, w, RingOf4());
  EXPECT_NEAR(cut - bare, 26'840'268'800.0 / 5e14, 1e-10);
  // Striped: every block of the 4 is cut on 16,383 of its rows: 65,532 per rank, 4x the pairs.
  SchemeParams striped = RingOf4();
  striped.layout = Layout::kStriped;
  t.gpu.cut_row_extra_pairs = 0;
  const double striped_bare = EstimateSeconds(t, w, striped);
  t.gpu.cut_row_extra_pairs = 100;
  EXPECT_NEAR(EstimateSeconds(t, w, striped) - striped_bare, 65'532.0 * 100 * 4 * 32 * 128 / 5e14,
              1e-10);
}

TEST(RingStepPartials, MeshWithOneRowMergesAsRingDoes) {
  // Mesh a = 1, b = 4 is Ring of 4: its Q slot's 4 blocks merge 3 times, the same 3.2464 ms.
  Topology t = testing::SmallCluster(4, 1);
  const Workload w = testing::ComputeBoundWorkload(Pass::kForward);
  SchemeParams mesh;
  mesh.scheme = Scheme("mesh");
  mesh.layout = Layout::kZigzag;
  mesh.tile_a = 1;
  mesh.tile_b = 4;
  mesh.placement = {"q", "kv"};
  const double bare = EstimateSeconds(t, w, mesh);
  t.gpu.ring_step_partial_passes = 12;
  EXPECT_NEAR(EstimateSeconds(t, w, mesh) - bare, 3 * 12 * kForwardPartialBytes / 3e12, 1e-9);
}

TEST(FrameworkOverhead, IsChargedOncePerAttentionCall) {
  // 1.5 ms per call: the forward alone is one call, forward + backward two.
  Topology t = testing::SmallCluster(4, 1);
  for (auto [pass, calls] : {std::pair<Pass, int>{Pass::kForward, 1},
                             {Pass::kBackward, 1},
                             {Pass::kForwardBackward, 2}}) {
    const Workload w = testing::ComputeBoundWorkload(pass);
    t.framework.step_overhead_s = 0;
    const double bare = EstimateSeconds(t, w, RingOf4());
    t.framework.step_overhead_s = 1.5e-3;
    EXPECT_NEAR(EstimateSeconds(t, w, RingOf4()) - bare, calls * 1.5e-3, 1e-12) << PassName(pass);
  }
}

}  // namespace
}  // namespace meshplan::planner
