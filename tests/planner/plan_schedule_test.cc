// ExpandPlan (planner/plan_schedule.h): the refusals, with messages derived here by hand, and a
// valid plan's estimate, schedule and rank -> GPU map.
#include "planner/plan_schedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "planner/schedule_builder.h"
#include "planner/schemes/registry.h"
#include "planner/strategy.h"
#include "tests/planner/test_cluster.h"

namespace meshplan::planner {
namespace {

// A mesh plan for 2 nodes x 4 GPUs: tile a x b, zigzag, KV group innermost.
Plan MeshPlan(int64_t a, int64_t b) {
  Plan plan;
  plan.params.scheme = Scheme("mesh");
  plan.params.layout = Layout::kZigzag;
  plan.params.tile_a = a;
  plan.params.tile_b = b;
  plan.params.placement = {"kv", "q"};
  plan.workload.batch = 1;
  plan.workload.seq_len = 4096;
  plan.workload.q_heads = 8;
  plan.workload.kv_heads = 4;
  plan.workload.head_dim = 64;
  plan.workload.mask = Mask::Causal();
  plan.workload.pass = Pass::kForwardBackward;
  plan.topology_name = "made-for";
  plan.num_gpus = 8;
  return plan;
}

Topology Cluster(int64_t nodes) {
  Topology t = testing::SmallCluster(4, nodes);  // name "test-cluster", source "test"
  t.source = "cluster.toml";
  return t;
}

// `r` is a refusal: kInvalidInput with exactly `message`.
void ExpectRefusal(const Result<PlanSchedule>& r, const std::string& message) {
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(r.status().message(), message);
}

TEST(ExpandPlanTest, RefusesAGpuCountMismatch) {
  ExpectRefusal(ExpandPlan(MeshPlan(2, 4), Cluster(4)),  // 8-GPU plan, 16 GPUs
                "plan for 8 GPUs (made for 'made-for') does not match topology 'test-cluster' "
                "(cluster.toml) with 16 GPUs");
}

TEST(ExpandPlanTest, RefusesADTypeTheGpuHasNoPeakFor) {
  Plan plan = MeshPlan(2, 4);
  plan.workload.dtype = DType::kFp8;  // SmallCluster has bf16, fp16 and fp32 peaks only
  ExpectRefusal(ExpandPlan(plan, Cluster(2)),
                "cluster.toml: gpu.peak_tflops: no entry for fp8, the workload's dtype");
}

TEST(ExpandPlanTest, RefusesParametersTheStrategyRejects) {
  ExpectRefusal(ExpandPlan(MeshPlan(2, 2), Cluster(2)),  // a 2 x 2 tile on 8 GPUs
                "plan mesh a=2 b=2 zigzag place=kv>q is not valid on topology 'test-cluster': "
                "tile 2 x 2 does not cover the 8 mesh ranks (a*b must equal them)");
}

TEST(ExpandPlanTest, RefusesAPlacementThatIsNotTheRankGrid) {
  Plan plan = MeshPlan(2, 4);
  plan.params.placement = {"q"};  // Describe shows no placement unless it names every dimension
  ExpectRefusal(ExpandPlan(plan, Cluster(2)),
                "plan mesh a=2 b=4 zigzag is not valid on topology 'test-cluster': "
                "placement must list each of [q, kv] once");
}

// Rank = q + 2*kv (canonical order q, kv); placement kv>q puts kv innermost on GPUs, so
// GPU = kv + 4*q: rank 1 (q=1, kv=0) -> GPU 4, rank 2 (q=0, kv=1) -> GPU 1.
TEST(ExpandPlanTest, ValidPlanComesWithItsEstimateScheduleAndGpus) {
  const auto r = ExpandPlan(MeshPlan(2, 4), Cluster(2));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->estimate.valid);
  EXPECT_EQ(r->schedule.num_ranks, 8);
  EXPECT_EQ(r->schedule.scheme, Scheme("mesh"));
  const std::vector<int64_t> want = {0, 4, 1, 5, 2, 6, 3, 7};
  EXPECT_EQ(r->rank_to_gpu, want);
}

}  // namespace
}  // namespace meshplan::planner

namespace meshplan::planner {
namespace {

// Compute ops of the expanded plan: (q_shard, kv_shard, cut rows per pair).
std::vector<std::tuple<int32_t, int32_t, float>> Blocks(const Plan& plan, const Topology& t) {
  auto expanded = ExpandPlan(plan, t);
  EXPECT_TRUE(expanded.ok()) << expanded.status().message();
  std::vector<std::tuple<int32_t, int32_t, float>> blocks;
  if (!expanded.ok()) return blocks;
  for (const RankProgram& prog : expanded->schedule.ranks) {
    for (const Op& op : prog.ops) {
      if (op.kind == OpKind::kCompute)
        blocks.emplace_back(op.q_shard, op.kv_shard, op.cut_rows_per_pair);
    }
  }
  return blocks;
}

TEST(ExpandPlanTest, ComputeOpsSayHowMuchOfTheirBlockTheMaskCuts) {
  // Contiguous causal ring on 4 GPUs, S = 4096 (shards of n = 1024): block (i, j) is whole for
  // j < i (every key before every query), a triangle on the diagonal (row r sees r + 1 of the n
  // keys: n - 1 cut rows over n(n + 1)/2 pairs), absent for j > i.
  Plan ring = MeshPlan(2, 2);
  ring.params.scheme = Scheme("ring");
  ring.params.layout = Layout::kContiguous;
  ring.params.tile_a = ring.params.tile_b = 1;
  ring.params.ring = 4;
  ring.params.placement = {"cp"};
  ring.num_gpus = 4;
  const auto blocks = Blocks(ring, Cluster(1));
  ASSERT_EQ(blocks.size(), 2u * (4 + 3 + 2 + 1));  // fwd + bwd, i + 1 blocks on rank i
  const float contiguous_diagonal = static_cast<float>(1023.0 / (1024.0 * 1025.0 / 2));
  for (const auto& [q, kv, cut] : blocks) {
    EXPECT_FLOAT_EQ(cut, q == kv ? contiguous_diagonal : 0.0f) << q << "," << kv;
  }
  // Zigzag with 4 shards of S = 4096: chunks of c = 512; shard i holds chunks i and 7 - i. Off the
  // diagonal the visible chunk pairs are whole: nothing cut. On it, the two triangles have c - 1
  // cut rows each, over 2c^2 + c pairs: 1022 / 524800.
  const float diagonal = static_cast<float>(1022.0 / 524800.0);
  ring.params.layout = Layout::kZigzag;
  for (const auto& [q, kv, cut] : Blocks(ring, Cluster(1))) {
    EXPECT_FLOAT_EQ(cut, q == kv ? diagonal : 0.0f) << q << "," << kv;
  }
  ring.workload.mask = Mask::Full();
  for (const auto& [q, kv, cut] : Blocks(ring, Cluster(1))) EXPECT_EQ(cut, 0.0f) << q << "," << kv;
  // Mesh (its own emitter) the same way. 2 x 4 on 8 GPUs cuts the sequence into 8 zigzag shards
  // (chunks of c = 256): 2(c - 1) / (2c^2 + c) = 510 / 131328 on the diagonal blocks, 0 elsewhere;
  // full: 0.
  Plan mesh = MeshPlan(2, 4);
  const float mesh_diagonal = static_cast<float>(510.0 / 131328.0);
  bool saw_diagonal = false;
  for (const auto& [q, kv, cut] : Blocks(mesh, Cluster(2))) {
    EXPECT_FLOAT_EQ(cut, q == kv ? mesh_diagonal : 0.0f) << q << "," << kv;
    saw_diagonal = saw_diagonal || q == kv;
  }
  EXPECT_TRUE(saw_diagonal);
  mesh.workload.mask = Mask::Full();
  const auto full = Blocks(mesh, Cluster(2));
  EXPECT_FALSE(full.empty());
  for (const auto& [q, kv, cut] : full) EXPECT_EQ(cut, 0.0f) << q << "," << kv;
}

// Issue 33: every scheme hands each rank's program to PlanContext::rank_done as soon as the rank
// is complete, so a consumer that replaces it (the simulator keeps only its timing view) never
// has every rank's full program at once. Seen here: a hook that empties each program it gets
// leaves the expanded schedule with every program empty, each rank handed over exactly once.
TEST(ExpandPlanTest, EverySchemeHandsEachRankOverAsItCompletes) {
  Workload w = MeshPlan(2, 4).workload;
  w.kv_heads = 8;                        // Ulysses over all 8 GPUs needs 8 KV heads
  const Topology topology = Cluster(2);  // 8 GPUs
  for (const Scheme& scheme : AllSchemes()) {
    const Strategy* strategy = FindStrategy(scheme);
    ASSERT_NE(strategy, nullptr) << SchemeName(scheme);
    PlanContext ctx(w, topology);
    std::vector<int> handed(8, 0);
    bool complete = true;  // every program handed over had ops
    ctx.rank_done = [&](int64_t rank, RankProgram& program) {
      ++handed[static_cast<size_t>(rank)];
      complete = complete && !program.ops.empty();
      program = RankProgram{};
      return true;
    };
    int expanded = 0;
    for (const SchemeParams& params : strategy->Enumerate(ctx)) {
      std::fill(handed.begin(), handed.end(), 0);
      auto schedule = strategy->Expand(ctx, params);
      if (!schedule.ok()) continue;
      ++expanded;
      for (int r = 0; r < 8; ++r) {
        EXPECT_EQ(handed[static_cast<size_t>(r)], 1)
            << SchemeName(scheme) << " " << DescribeParams(params) << ": rank " << r;
        EXPECT_TRUE(schedule->ranks[static_cast<size_t>(r)].ops.empty())
            << SchemeName(scheme) << " " << DescribeParams(params) << ": rank " << r
            << " was not handed over while expanding";
      }
      if (expanded == 3) break;  // a few parameter sets per scheme
    }
    EXPECT_GT(expanded, 0) << SchemeName(scheme) << ": no parameters expanded on 8 GPUs";
    EXPECT_TRUE(complete) << SchemeName(scheme) << ": an empty program was handed over";
  }
}

// Issue 49: a consumer that has seen enough (a replay over its memory limit) stops the expansion:
// the hook's false at the first rank handed over ends every scheme's expansion there, with
// ExpansionStopped, the hook called once.
TEST(ExpandPlanTest, AHookThatSaysStopEndsEverySchemesExpansion) {
  Workload w = MeshPlan(2, 4).workload;
  w.kv_heads = 8;
  const Topology topology = Cluster(2);
  for (const Scheme& scheme : AllSchemes()) {
    const Strategy* strategy = FindStrategy(scheme);
    ASSERT_NE(strategy, nullptr) << SchemeName(scheme);
    PlanContext ctx(w, topology);
    int calls = 0;
    ctx.rank_done = [&](int64_t, RankProgram&) {
      ++calls;
      return false;
    };
    for (const SchemeParams& params : strategy->Enumerate(ctx)) {
      calls = 0;
      auto schedule = strategy->Expand(ctx, params);
      if (calls == 0) continue;  // refused before any rank (not this test's case)
      EXPECT_FALSE(schedule.ok()) << SchemeName(scheme) << " " << DescribeParams(params);
      if (!schedule.ok()) {
        EXPECT_EQ(schedule.status().message(), sched::ExpansionStopped().message());
      }
      EXPECT_EQ(calls, 1) << SchemeName(scheme) << " " << DescribeParams(params);
      break;
    }
  }
}

}  // namespace
}  // namespace meshplan::planner
