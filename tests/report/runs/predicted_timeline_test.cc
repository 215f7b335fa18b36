// The simulator's replay as a timeline (report/runs/predicted_timeline.h): per rank from its
// statistics, per op class from its op times through the same function as a measured run.
#include "report/runs/predicted_timeline.h"

#include <gtest/gtest.h>

#include <cmath>

#include "planner/context.h"
#include "planner/search.h"
#include "tests/planner/test_cluster.h"

namespace meshplan::report {
namespace {

Op MakeOp(OpKind kind, Phase phase, StreamId stream) {
  Op op;
  op.kind = kind;
  op.phase = phase;
  op.stream = stream;
  return op;
}

double ClassS(const exec::RunTimeline& t, exec::OpClass c) {
  return (*t.op_classes)[static_cast<size_t>(c)].sum_s;
}
int64_t ClassOps(const exec::RunTimeline& t, exec::OpClass c) {
  return (*t.op_classes)[static_cast<size_t>(c)].ops;
}

// rank 0: compute fwd [0, 1000 ns], send [1000, 2000 ns]
// rank 1: recv [0, 1000 ns], compute bwd [1000, 3000 ns]
sim::PlanSimulation HandMade() {
  sim::PlanSimulation s;
  s.schedule.num_ranks = 2;
  s.schedule.ranks.resize(2);
  s.schedule.ranks[0].Add(MakeOp(OpKind::kCompute, Phase::kForward, StreamId::kCompute));
  s.schedule.ranks[0].Add(MakeOp(OpKind::kSend, Phase::kForward, StreamId::kSend));
  s.schedule.ranks[1].Add(MakeOp(OpKind::kRecv, Phase::kForward, StreamId::kRecv));
  s.schedule.ranks[1].Add(MakeOp(OpKind::kCompute, Phase::kBackward, StreamId::kCompute));
  s.result.total_s = 3e-6;
  // compute = compute busy: 1 us and 2 us; exposed = last end - compute: 2 - 1 = 1 us, 3 - 2 = 1
  // us; idle = 3 us - last end: 1 us and 0.
  s.result.ranks = {{1e-6, 1e-6, 1e-6, 0}, {2e-6, 1e-6, 0, 0}};
  s.result.op_times = {{{0, 1000}, {1000, 2000}}, {{0, 1000}, {1000, 3000}}};
  return s;
}

TEST(PredictedTimeline, PerRankFromTheStatisticsPerClassFromTheOpTimes) {
  const exec::RunTimeline t = PredictedTimeline(HandMade());
  EXPECT_DOUBLE_EQ(t.run_s, 3e-6);
  ASSERT_EQ(t.ranks.size(), 2u);
  EXPECT_DOUBLE_EQ(t.ranks[0].compute_s, 1e-6);
  EXPECT_DOUBLE_EQ(t.ranks[0].exposed_comm_s, 1e-6);
  EXPECT_DOUBLE_EQ(t.ranks[0].idle_s, 1e-6);
  EXPECT_DOUBLE_EQ(t.ranks[1].compute_s, 2e-6);
  EXPECT_DOUBLE_EQ(t.ranks[1].idle_s, 0);
  EXPECT_DOUBLE_EQ(t.compute.mean, 1.5e-6);  // (1 + 2) / 2 us
  EXPECT_DOUBLE_EQ(t.idle.max, 1e-6);
  ASSERT_TRUE(t.op_classes.has_value());
  // Nanoseconds to seconds: 1000 ns = 1e-6 s; the compute bwd op 3000 - 1000 = 2000 ns.
  EXPECT_DOUBLE_EQ(ClassS(t, exec::OpClass::kComputeForward), 1e-6);
  EXPECT_DOUBLE_EQ(ClassS(t, exec::OpClass::kComputeBackward), 2e-6);
  EXPECT_DOUBLE_EQ(ClassS(t, exec::OpClass::kSend), 1e-6);
  EXPECT_DOUBLE_EQ(ClassS(t, exec::OpClass::kRecv), 1e-6);
  EXPECT_EQ(ClassOps(t, exec::OpClass::kComputeBackward), 1);
  EXPECT_EQ(ClassOps(t, exec::OpClass::kMergeForward), 0);
}

TEST(PredictedTimeline, NoOpTimesNoOpClasses) {
  sim::PlanSimulation s = HandMade();
  s.result.op_times.clear();  // a replay with record_op_times = false
  const exec::RunTimeline t = PredictedTimeline(s);
  EXPECT_FALSE(t.op_classes.has_value());
  EXPECT_EQ(t.ranks.size(), 2u);
}

TEST(PredictedTimeline, ComputeClassesAddUpToTheRanksComputeOnAReplayedPlan) {
  const Topology topology = meshplan::testing::SmallCluster(4, 2);
  const Workload workload = meshplan::testing::SmallWorkload();  // fwd+bwd
  const planner::PlanContext ctx(workload, topology);
  const planner::SearchResult found = planner::Search(ctx, {});
  ASSERT_FALSE(found.ranked.empty());
  const Plan plan = planner::MakePlan(ctx, found.ranked.front().params);
  sim::SimOptions options;
  options.record_op_times = true;
  auto sim = sim::SimulatePlan(plan, topology, options);
  ASSERT_TRUE(sim.ok()) << sim.status().message();
  const exec::RunTimeline t = PredictedTimeline(*sim);
  ASSERT_TRUE(t.op_classes.has_value());
  // The simulator's compute_s is the compute stream's busy time, the sum of end - start of its
  // computes and merges; the classes sum the same durations, so the four compute-stream classes
  // add up to the sum of the ranks' compute (up to the rounding of ns to seconds).
  double classes = 0, ranks = 0;
  for (exec::OpClass c : {exec::OpClass::kComputeForward, exec::OpClass::kComputeBackward,
                          exec::OpClass::kMergeForward, exec::OpClass::kMergeBackward}) {
    classes += ClassS(t, c);
  }
  for (const exec::RankTimes& r : t.ranks) ranks += r.compute_s;
  EXPECT_NEAR(classes, ranks, 1e-9 * ranks);
  EXPECT_GT(ClassS(t, exec::OpClass::kComputeBackward), 0);  // the pass has a backward
  // Every op of the schedule is counted once.
  int64_t ops = 0;
  for (size_t c = 0; c < exec::kNumOpClasses; ++c) ops += (*t.op_classes)[c].ops;
  EXPECT_EQ(ops, sim->schedule.TotalOps());
}

}  // namespace
}  // namespace meshplan::report
