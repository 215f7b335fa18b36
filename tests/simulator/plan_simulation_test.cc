// SimulatePlan: a plan is checked against the topology before anything is expanded, invalid
// parameters come back with the strategy's reason, and a valid plan replays on every GPU.
#include "simulator/plan_simulation.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "core/cluster/topology_toml.h"
#include "planner/context.h"
#include "planner/plan_schedule.h"
#include "planner/schemes/registry.h"
#include "planner/search.h"
#include "planner/strategy.h"
#include "tests/planner/test_cluster.h"

namespace meshplan::sim {
namespace {

Workload SmallWorkload() {
  Workload w;
  w.batch = 1;
  w.seq_len = 4096;
  w.q_heads = 8;
  w.kv_heads = 4;
  w.head_dim = 64;
  w.mask = Mask::Causal();
  w.pass = Pass::kForwardBackward;
  return w;
}

SchemeParams MeshGrid(int64_t a, int64_t b) {
  SchemeParams p;
  p.scheme = Scheme("mesh");
  p.tile_a = a;
  p.tile_b = b;
  p.layout = Layout::kZigzag;
  p.placement = {"kv", "q"};
  return p;
}

// A plan made by the planner for `topology`.
Plan PlanFor(const Workload& w, const Topology& topology, const SchemeParams& params) {
  const planner::PlanContext ctx(w, topology);
  return planner::MakePlan(ctx, params);
}

bool Contains(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

TEST(SimulatePlanTest, GpuCountMismatchNamesBothCountsAndTheTopology) {
  const Workload w = SmallWorkload();
  const Plan plan = PlanFor(w, meshplan::testing::SmallCluster(4, 2), MeshGrid(2, 4));  // 8 GPUs
  Topology bigger = meshplan::testing::SmallCluster(4, 4);                              // 16 GPUs
  bigger.source = "sixteen.toml";
  const auto r = SimulatePlan(plan, bigger);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidInput);
  const std::string& m = r.status().message();
  EXPECT_TRUE(Contains(m, "8 GPUs")) << m;
  EXPECT_TRUE(Contains(m, "16 GPUs")) << m;
  EXPECT_TRUE(Contains(m, "sixteen.toml")) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
}

TEST(SimulatePlanTest, DTypeTheGpuLacksNamesTheDTypeAndTheTopology) {
  Topology topology = meshplan::testing::SmallCluster(4, 2);  // peaks for bf16, fp16, fp32 only
  topology.source = "no-fp8.toml";
  ASSERT_EQ(topology.gpu.peak_tflops.count(DType::kFp8), 0u);
  Workload w = SmallWorkload();
  w.dtype = DType::kFp8;
  const Plan plan = PlanFor(w, topology, MeshGrid(2, 4));
  const auto r = SimulatePlan(plan, topology);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidInput);
  EXPECT_TRUE(Contains(r.status().message(), "fp8")) << r.status().message();
  EXPECT_TRUE(Contains(r.status().message(), "no-fp8.toml")) << r.status().message();
}

TEST(SimulatePlanTest, InvalidParametersGiveTheStrategysReason) {
  const Topology topology = meshplan::testing::SmallCluster(4, 2);
  const Workload w = SmallWorkload();
  // A 3 x 3 tile does not cover 8 ranks.
  const SchemeParams bad = MeshGrid(3, 3);
  const Plan plan = PlanFor(w, topology, bad);
  const planner::PlanContext ctx(w, topology);
  const planner::Estimate verdict = planner::MakeStrategy(Scheme("mesh"))->Evaluate(ctx, bad);
  ASSERT_FALSE(verdict.valid);
  ASSERT_FALSE(verdict.reason.empty());
  const auto r = SimulatePlan(plan, topology);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidInput);
  EXPECT_TRUE(Contains(r.status().message(), verdict.reason)) << r.status().message();
}

TEST(SimulatePlanTest, ValidPlanReplaysOnEveryGpu) {
  const Topology topology = meshplan::testing::SmallCluster(4, 2);
  const Workload w = SmallWorkload();
  const SchemeParams params = MeshGrid(2, 4);
  const Plan plan = PlanFor(w, topology, params);
  const auto r = SimulatePlan(plan, topology);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(static_cast<int64_t>(r->result.ranks.size()), topology.num_gpus());
  EXPECT_EQ(r->schedule.num_ranks, topology.num_gpus());
  EXPECT_GT(r->result.total_s, 0);
  // The estimate is the strategy's own verdict on the same plan.
  const planner::PlanContext ctx(w, topology);
  const planner::Estimate direct = planner::MakeStrategy(Scheme("mesh"))->Evaluate(ctx, params);
  EXPECT_TRUE(r->estimate.valid);
  EXPECT_EQ(r->estimate.time_s, direct.time_s);
  // Ranks sit where the plan's placement puts them, each GPU once.
  const Placement placement(planner::RankDims(params), params.placement);
  ASSERT_EQ(static_cast<int64_t>(r->rank_to_gpu.size()), topology.num_gpus());
  for (int64_t rank = 0; rank < topology.num_gpus(); ++rank)
    EXPECT_EQ(r->rank_to_gpu[rank], placement.GpuOf(rank));
  std::vector<int64_t> sorted = r->rank_to_gpu;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t g = 0; g < topology.num_gpus(); ++g) EXPECT_EQ(sorted[g], g);
  // Default options keep every op's times (for traces); no rank is busier than the end time.
  ASSERT_EQ(r->result.op_times.size(), r->schedule.ranks.size());
  for (size_t rank = 0; rank < r->schedule.ranks.size(); ++rank) {
    EXPECT_EQ(r->result.op_times[rank].size(), r->schedule.ranks[rank].ops.size());
    EXPECT_LE(r->result.ranks[rank].compute_s, r->result.total_s * (1 + 1e-9));
  }
}

TEST(SimulatePlanTest, OpTimesCanBeLeftOut) {
  const Topology topology = meshplan::testing::SmallCluster(4, 2);
  const Plan plan = PlanFor(SmallWorkload(), topology, MeshGrid(2, 4));
  SimOptions options;
  options.record_op_times = false;
  const auto r = SimulatePlan(plan, topology, options);
  ASSERT_TRUE(r.ok()) << r.status().message();
  size_t recorded = 0;
  for (const auto& times : r->result.op_times) recorded += times.size();
  EXPECT_EQ(recorded, 0u);
  EXPECT_GT(r->result.total_s, 0);
}

TEST(SimulatePlanTest, ProgressCountsCompletedOpsUpToTheSchedulesOps) {
  // Mesh 16 x 16 on the 256 GPUs of the default cluster, fwd+bwd: over 2^16 events, so the
  // callback is called; each call sees the ops completed so far, never decreasing, never more than
  // the schedule holds, and the schedule's op count as the total.
  const Topology topology = DefaultTopology();
  const Plan plan = PlanFor(SmallWorkload(), topology, MeshGrid(16, 16));
  std::vector<std::pair<int64_t, int64_t>> calls;
  SimOptions options;
  options.record_op_times = false;
  options.use_symmetry = false;  // every rank replayed: the schedule's every op is counted
  options.progress = [&](int64_t done, int64_t total) { calls.emplace_back(done, total); };
  const auto r = SimulatePlan(plan, topology, options);
  ASSERT_TRUE(r.ok()) << r.status().message();
  // The replay freed the schedule's ops (no op times were asked for): count them on a fresh
  // expansion of the same plan.
  auto expanded = planner::ExpandPlan(plan, topology);
  ASSERT_TRUE(expanded.ok()) << expanded.status().message();
  const int64_t ops = expanded->schedule.TotalOps();
  EXPECT_TRUE(r->schedule.ranks.empty());
  ASSERT_EQ(static_cast<int64_t>(calls.size()), r->result.events / kProgressEvents);
  ASSERT_FALSE(calls.empty());
  int64_t last = 0;
  for (const auto& [done, total] : calls) {
    EXPECT_EQ(total, ops);
    EXPECT_GE(done, last);
    EXPECT_LE(done, ops);
    last = done;
  }
}

// Issue 33: the replay's memory, projected from the programs as they are expanded.
TEST(SimulatePlanTest, ProjectedReplayBytesIsTheMeanProgramTimesTheRanksKept) {
  // 1000 bytes over the first 4 ranks: 250 per rank; 16 ranks kept: 4000 bytes of programs.
  // The timing view's replay needs 1.0 of that, a replay with op times 2.1 (measured factors).
  EXPECT_DOUBLE_EQ(ProjectedReplayBytes(1000, 4, 16, true), 4000.0);
  EXPECT_DOUBLE_EQ(ProjectedReplayBytes(1000, 4, 16, false), 8400.0);
}

TEST(SimulatePlanTest, ReplayOverMemoryLimitIsRefusedWithItsNeedAndGpusThatFit) {
  const Workload w = SmallWorkload();
  const Topology topology = meshplan::testing::SmallCluster(4, 2);  // 8 GPUs
  const Plan plan = PlanFor(w, topology, MeshGrid(2, 4));
  SimOptions options;
  options.use_symmetry = false;       // every rank's program is kept
  options.memory_limit_bytes = 1000;  // less than one rank's program (hundreds of ops of 72 B)
  options.memory_limit_source = "--max-memory 1000";
  const auto refused = SimulatePlan(plan, topology, options);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), ErrorCode::kInvalidInput);
  const std::string& m = refused.status().message();
  EXPECT_TRUE(Contains(m, "replaying this plan needs about ")) << m;
  EXPECT_TRUE(Contains(m, "(8 ranks' programs of about ")) << m;
  EXPECT_TRUE(Contains(m, "more than 1000 B (--max-memory 1000)")) << m;
  // Under a need above the limit, at most half the GPUs fit (a power of two below 8).
  EXPECT_TRUE(Contains(m, "at most about 4 GPUs") || Contains(m, "at most about 2 GPUs") ||
              Contains(m, "at most about 1 GPU "))
      << m;

  // The same plan under a limit it fits (1 GiB) replays, with the time it has without a limit.
  options.memory_limit_bytes = double(1 << 30);
  const auto fits = SimulatePlan(plan, topology, options);
  ASSERT_TRUE(fits.ok()) << fits.status().message();
  SimOptions unlimited;
  unlimited.use_symmetry = false;
  const auto reference = SimulatePlan(plan, topology, unlimited);
  ASSERT_TRUE(reference.ok()) << reference.status().message();
  EXPECT_EQ(fits->result.total_s, reference->result.total_s);
}

}  // namespace
}  // namespace meshplan::sim
