// The search: ordering, rejected schemes with reasons, memory marking, and the time model.
#include "planner/search.h"

#include <gtest/gtest.h>

#include "planner/schemes/registry.h"
#include "planner/strategy.h"
#include "tests/planner/test_cluster.h"

namespace meshplan::planner {
namespace {

Workload SmallWorkload() {
  Workload w;
  w.seq_len = 1 << 14;
  w.q_heads = 8;
  w.kv_heads = 2;
  w.head_dim = 64;
  return w;
}

TEST(Search, RanksFittingPlansFirstByTimeAndExplainsRejections) {
  const Topology t = testing::SmallCluster(4, 2);  // 8 GPUs
  const Workload w = SmallWorkload();
  const PlanContext ctx(w, t);
  const SearchResult r = Search(ctx, {});
  ASSERT_FALSE(r.ranked.empty());
  for (size_t i = 1; i < r.ranked.size(); ++i) {
    const Estimate& x = r.ranked[i - 1];
    const Estimate& y = r.ranked[i];
    ASSERT_TRUE(x.fits >= y.fits);
    if (x.fits == y.fits) {
      ASSERT_LE(x.time_s, y.time_s);
    }
  }
  // Ulysses over 8 GPUs needs 8 KV heads; the workload has 2.
  ASSERT_EQ(r.rejected.size(), 1u);
  EXPECT_EQ(r.rejected[0].params.scheme, Scheme("ulysses"));
  EXPECT_NE(r.rejected[0].reason.find("exceeds the 2 KV heads"), std::string::npos)
      << r.rejected[0].reason;
  // Every other scheme appears.
  for (Scheme s : planner::AllSchemes()) {
    if (s == Scheme("ulysses")) continue;
    bool found = false;
    for (const Estimate& e : r.ranked) found = found || e.params.scheme == s;
    EXPECT_TRUE(found) << SchemeName(s);
  }
}

TEST(Search, PlansThatDoNotFitAreKeptAndMarked) {
  Topology t = testing::SmallCluster(4, 2);
  t.gpu.memory_bytes = 1e6;  // far too small for any plan
  const Workload w = SmallWorkload();
  const PlanContext ctx(w, t);
  const SearchResult r = Search(ctx, {});
  ASSERT_FALSE(r.ranked.empty());
  for (const Estimate& e : r.ranked) EXPECT_FALSE(e.fits);
}

TEST(Search, ReservedMemoryCountsAgainstTheGpu) {
  const Topology t = testing::SmallCluster(4, 2);
  const Workload w = SmallWorkload();
  const PlanContext roomy(w, t, 0.0);
  const PlanContext full(w, t, t.gpu.memory_bytes);  // everything reserved
  SearchOptions only_ring;
  only_ring.schemes = {Scheme("ring")};
  EXPECT_TRUE(Search(roomy, only_ring).ranked.front().fits);
  EXPECT_FALSE(Search(full, only_ring).ranked.front().fits);
}

TEST(Search, SchemeFilterKeepsOnlyThoseSchemes) {
  const Topology t = testing::SmallCluster(4, 2);
  const Workload w = SmallWorkload();
  const PlanContext ctx(w, t);
  SearchOptions options;
  options.schemes = {Scheme("mesh"), Scheme("ring")};
  for (const Estimate& e : Search(ctx, options).ranked) {
    EXPECT_TRUE(e.params.scheme == Scheme("mesh") || e.params.scheme == Scheme("ring"));
  }
}

// Ring forward, full mask, on 2 x 4 GPUs: P = 8 steps; each step computes one S/P x S/P block
// while the next KV shard moves; the node-crossing hop (IB) is the slowest link.
// time = c + 7 * max(c, t).
TEST(TimeModel, RingForwardFollowsThePipelineFormula) {
  const Topology t = testing::SmallCluster(4, 2, 400, 50, 1, 5);
  Workload w = SmallWorkload();
  w.mask = Mask::Full();
  w.pass = Pass::kForward;
  w.seq_len = 1 << 16;
  const PlanContext ctx(w, t);
  SchemeParams p;
  p.scheme = Scheme("ring");
  p.layout = Layout::kContiguous;
  p.ring = 8;
  p.placement = {"cp"};
  const Estimate e = MakeStrategy(Scheme("ring"))->Evaluate(ctx, p);
  ASSERT_TRUE(e.valid) << e.reason;
  const double n = double(w.seq_len) / 8;                           // tokens per shard
  const double block_flops = 4.0 * n * n * w.q_heads * w.head_dim;  // 4 B sq skv Hq d
  const double c = block_flops / (1000e12 * 0.5);                   // peak x efficiency
  const double kv_bytes = 2.0 * w.kv_heads * n * w.head_dim * 2;    // K and V, bf16
  const double transfer = 5e-6 + kv_bytes / 50e9;
  EXPECT_NEAR(e.time_s, c + 7 * std::max(c, transfer), 1e-12);
  EXPECT_NEAR(e.compute_s, 8 * c, 1e-12);
}

TEST(MakePlan, CarriesWorkloadTopologyAndParameters) {
  const Topology t = testing::SmallCluster(4, 2);
  const Workload w = SmallWorkload();
  const PlanContext ctx(w, t);
  SchemeParams p;
  p.scheme = Scheme("mesh");
  p.tile_a = 2;
  p.tile_b = 4;
  const Plan plan = MakePlan(ctx, p);
  EXPECT_EQ(plan.num_gpus, 8);
  EXPECT_EQ(plan.topology_name, "test-cluster");
  EXPECT_EQ(plan.params.tile_b, 4);
  EXPECT_EQ(plan.workload.kv_heads, 2);
}

}  // namespace
}  // namespace meshplan::planner
