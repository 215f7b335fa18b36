// A plan file's run prepared in the library (executor/plan_run.h): a backward-only plan runs as
// fwd+bwd (the backward needs the forward's O and LSE), a plan for another cluster is refused
// naming the plan file, and inputs are rounded to the run's input type with its tolerance.
#include "executor/plan_run.h"

#include <gtest/gtest.h>

#include <vector>

#include "executor/device/half_float.h"
#include "planner/schemes/registry.h"
#include "tests/executor/scheme_cases.h"

namespace meshplan::exec {
namespace {

Plan RingPlan(int64_t gpus, Pass pass) {
  Plan plan;
  plan.params = Params(Scheme("ring"), Layout::kZigzag);
  plan.params.ring = gpus;
  plan.params.placement = CanonicalPlacement(planner::RankDims(plan.params));
  plan.workload.seq_len = 64;
  plan.workload.q_heads = 2;
  plan.workload.kv_heads = 2;
  plan.workload.head_dim = 8;
  plan.workload.dtype = DType::kBf16;
  plan.workload.mask = Mask::Causal();
  plan.workload.pass = pass;
  plan.topology_name = "test";
  plan.num_gpus = gpus;
  return plan;
}

TEST(PlanRun, ABackwardPlanRunsWithItsForward) {
  auto run =
      PreparePlanRun(RingPlan(4, Pass::kBackward), "p.toml", Cluster(4), {}, InputType::kFp32);
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_TRUE(run->widened);
  EXPECT_EQ(run->plan.workload.pass, Pass::kForwardBackward);
  bool forward = false, backward = false;
  for (const Op& op : run->schedule.ranks[0].ops) {
    if (op.kind != OpKind::kCompute) continue;
    forward = forward || op.phase == Phase::kForward;
    backward = backward || op.phase == Phase::kBackward;
  }
  EXPECT_TRUE(forward && backward);
  // dO of every token, head and dim is there for the check.
  EXPECT_EQ(CheckInputs(*run).d_o.data.size(), 64u * 2 * 8);
}

TEST(PlanRun, APlanForAnotherClusterIsRefusedNamingTheFile) {
  auto run =
      PreparePlanRun(RingPlan(4, Pass::kForward), "p.toml", Cluster(8), {}, InputType::kFp32);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(run.status().message().rfind("p.toml: plan for 4 GPUs", 0), 0u)
      << run.status().message();
}

TEST(PlanRun, CheckInputsAreRoundedToTheInputTypeWithItsTolerance) {
  auto run =
      PreparePlanRun(RingPlan(4, Pass::kForward), "p.toml", Cluster(4), {"", 5}, InputType::kBf16);
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_DOUBLE_EQ(run->tolerance, 2e-2);
  int changed_by_rounding = 0;
  for (float x : CheckInputs(*run).q.data)
    changed_by_rounding += RoundToInput(InputType::kBf16, x) != x;
  EXPECT_EQ(changed_by_rounding, 0);  // every value already a bf16
  // The same seed in fp32 keeps values bf16 cannot hold (random floats have 24 significant bits).
  auto fp32 =
      PreparePlanRun(RingPlan(4, Pass::kForward), "p.toml", Cluster(4), {"", 5}, InputType::kFp32);
  ASSERT_TRUE(fp32.ok());
  int not_bf16 = 0;
  for (float x : CheckInputs(*fp32).q.data) not_bf16 += RoundToInput(InputType::kBf16, x) != x;
  EXPECT_GT(not_bf16, 0);
}

TEST(PlanRun, RepeatedRunsWarmUpOnceThenTimeEachRun) {
  auto run = PreparePlanRun(RingPlan(4, Pass::kForwardBackward), "p.toml", Cluster(4), {},
                            InputType::kFp32);
  ASSERT_TRUE(run.ok()) << run.status().message();
  std::vector<int> seen;  // the observer's run numbers: 0 for the warm-up
  auto repeated = ExecuteRepeated(*run, ExecuteConfig{}, 3, [&](int r, int runs, double time_s) {
    EXPECT_EQ(runs, 3);
    EXPECT_GT(time_s, 0);
    seen.push_back(r);
  });
  ASSERT_TRUE(repeated.ok()) << repeated.status().message();
  EXPECT_EQ(seen, (std::vector<int>{0, 1, 2, 3}));  // 4 runs: the warm-up and 3 timed
  EXPECT_EQ(repeated->runs.warm_up, 1);
  EXPECT_EQ(repeated->runs.timelines.size(), 3u);
  EXPECT_EQ(repeated->runs.wall_s.size(), 3u);
  EXPECT_EQ(repeated->runs.stats.n, 3);
  EXPECT_EQ(repeated->first.timings.size(), 4u);  // the first timed run's, per rank
  EXPECT_EQ(repeated->first.outputs.o.data.size(), 64u * 2 * 8);
  // The same inputs give the same outputs up to fp32 summation order.
  auto once =
      ExecuteRepeated(*run, ExecuteConfig{}, 1, [&](int r, int, double) { seen.push_back(r); });
  ASSERT_TRUE(once.ok()) << once.status().message();
  EXPECT_EQ(seen.size(), 5u);  // one run, no warm-up
  EXPECT_EQ(seen.back(), 1);
  EXPECT_EQ(once->runs.warm_up, 0);
  ASSERT_EQ(once->first.outputs.o.data.size(), repeated->first.outputs.o.data.size());
  for (size_t i = 0; i < once->first.outputs.o.data.size(); ++i) {
    EXPECT_NEAR(once->first.outputs.o.data[i], repeated->first.outputs.o.data[i], 1e-5) << i;
  }
  EXPECT_EQ(ExecuteRepeated(*run, ExecuteConfig{}, 0).status().code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(ExecuteRepeated(*run, ExecuteConfig{}, 1001).status().code(), ErrorCode::kInvalidInput);
}

}  // namespace
}  // namespace meshplan::exec
