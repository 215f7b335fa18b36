// All-gather KV's schedule expansion (planner/schemes/allgather_kv.cc): CheckSchedule passes and
// every rank sends and receives exactly the bytes of docs/schemes.md.
#include <gtest/gtest.h>

#include <algorithm>

#include "planner/schemes/common.h"
#include "planner/schemes/registry.h"
#include "tests/planner/schemes/expansion_cases.h"
#include "tests/planner/test_cluster.h"

namespace meshplan::planner::scheme_tests {
namespace {

TEST(SchemeScheduleTest, AllGatherKV) {
  RunAllPasses(Make(Scheme("allgather-kv"), 1, Layout::kZigzag, Mask::Causal(), 8, 8));
  RunAllPasses(Make(Scheme("allgather-kv"), 4, Layout::kZigzag, Mask::Causal(), 8, 2));
  RunAllPasses(Make(Scheme("allgather-kv"), 6, Layout::kContiguous, UnevenDocs(), 8, 8));
  RunAllPasses(Make(Scheme("allgather-kv"), 8, Layout::kStriped, Mask::Full(), 4, 4));
  RunAllPasses(Make(Scheme("allgather-kv"), 2, Layout::kZigzag, Mask::Window(200), 8, 8));
  RunAllPasses(
      Make(Scheme("allgather-kv"), 6, Layout::kBalanced, UnevenDocs(), 8, 8));  // 24 chunks of 80
  RunAllPasses(Make(Scheme("allgather-kv"), 4, Layout::kBalanced,
                    Mask::Documents({700, 100, 900, 220}, true), 8, 2));
}

// The balanced layout on documents of 28 and 4 tokens over 32 tokens, 2 GPUs: 8 chunks of 4
// (kBalancedChunksPerShard = 4). Row t < 28 sees t + 1 keys, rows 28..31 see 1..4. Chunk work:
// c0..c6 = 10, 26, 42, 58, 74, 90, 106 (sums of four consecutive t + 1), c7 = 1+2+3+4 = 10.
//   contiguous: {c0..c3} 136, {c4..c7} 280: the busier rank has 280 pairs;
//   zigzag (chunks of 8: 36, 100, 164, 116): {36, 116} 152, {100, 164} 264;
//   balanced (greedy, ties to the lower chunk and shard): c6 to 0 (106), c5 to 1 (90), c4 to 1
//   (164), c3 to 0 (164), c2 to 0 (206, the tie goes to shard 0), c1 to 1 (190), c0 to 1 (200,
//   now full), c7 to 0 (216): the busier rank has 216.
// The busiest rank's FLOPs, and so the estimated compute, scale with those counts.
TEST(AllGatherBalanced, TheBusiestRankCarriesTheHandDerivedPairs) {
  const Topology t = testing::SmallCluster(2, 1);
  Workload w = testing::SmallWorkload();
  w.seq_len = 32;
  w.mask = Mask::Documents({28, 4});
  const PlanContext ctx(w, t);
  const auto strategy = MakeStrategy(Scheme("allgather-kv"));
  auto flops = [&](Layout layout) {
    SchemeParams p = strategy->Enumerate(ctx).front();
    p.layout = layout;
    const Estimate e = strategy->Evaluate(ctx, p);
    EXPECT_TRUE(e.valid) << e.reason;
    return e.flops_max;
  };
  const double contiguous = flops(Layout::kContiguous);
  EXPECT_DOUBLE_EQ(flops(Layout::kZigzag) / contiguous, 264.0 / 280.0);
  EXPECT_DOUBLE_EQ(flops(Layout::kBalanced) / contiguous, 216.0 / 280.0);
  // The search offers it for documents, and never to the 2-D schemes.
  const std::vector<Layout> layouts = schemes::SearchLayouts(w.mask, false);
  EXPECT_NE(std::find(layouts.begin(), layouts.end(), Layout::kBalanced), layouts.end());
  const std::vector<Layout> tiles = schemes::TileLayouts(w.mask);
  EXPECT_EQ(std::find(tiles.begin(), tiles.end(), Layout::kBalanced), tiles.end());
}

// Invalid sizes are errors (kInvalidInput), not malformed schedules.
TEST(SchemeScheduleTest, AllGatherKVInvalidSizesAreErrors) {
  ExpectInvalid(Make(Scheme("allgather-kv"), 4, Layout::kStriped, Mask::Window(10), 8,
                     8));  // striped + window
  // 1920 tokens do not split into 7 x 4 chunks.
  ExpectInvalid(Make(Scheme("allgather-kv"), 7, Layout::kBalanced, UnevenDocs(), 8, 8));
}

}  // namespace
}  // namespace meshplan::planner::scheme_tests
