// SimulatedSeconds and the SimulationTimer: the same step time as replaying the plan with
// SimulatePlan, and the callback before every replay.
#include "simulator/simulation_timer.h"

#include <gtest/gtest.h>

#include <vector>

#include "planner/context.h"
#include "planner/schemes/registry.h"
#include "planner/search.h"
#include "planner/strategy.h"
#include "simulator/plan_simulation.h"
#include "tests/planner/test_cluster.h"

namespace meshplan::sim {
namespace {

TEST(SimulatedSeconds, EqualsTheReplayOfThePlanFile) {
  const Topology topology = meshplan::testing::SmallCluster(4, 2);
  // The context refers to the workload and the topology: both outlive it.
  const Workload workload = meshplan::testing::SmallWorkload();
  const planner::PlanContext ctx(workload, topology);
  const planner::SearchResult result = planner::Search(ctx, {});
  ASSERT_FALSE(result.ranked.empty());
  for (size_t i = 0; i < result.ranked.size() && i < 3; ++i) {
    const SchemeParams& params = result.ranked[i].params;
    auto seconds = SimulatedSeconds(ctx, params);
    ASSERT_TRUE(seconds.ok()) << seconds.status().message();
    auto replay = SimulatePlan(planner::MakePlan(ctx, params), topology);
    ASSERT_TRUE(replay.ok()) << replay.status().message();
    EXPECT_EQ(*seconds, replay->result.total_s) << planner::DescribeParams(params);
  }
}

TEST(SimulationTimer, CallsBackBeforeEveryReplayCountingFromOne) {
  const Topology topology = meshplan::testing::SmallCluster(4, 1);
  // The context refers to the workload and the topology: both outlive it.
  const Workload workload = meshplan::testing::SmallWorkload();
  const planner::PlanContext ctx(workload, topology);
  const planner::SearchResult result = planner::Search(ctx, {});
  ASSERT_FALSE(result.ranked.empty());
  std::vector<int> calls;
  SimulationTimer timer([&](int call) { calls.push_back(call); });
  for (int i = 0; i < 2; ++i) {
    auto seconds = timer.Seconds(ctx, result.ranked.front().params);
    ASSERT_TRUE(seconds.ok()) << seconds.status().message();
    EXPECT_GT(*seconds, 0);
  }
  EXPECT_EQ(calls, (std::vector<int>{1, 2}));
  SimulationTimer quiet;  // no callback
  EXPECT_TRUE(quiet.Seconds(ctx, result.ranked.front().params).ok());
}

}  // namespace
}  // namespace meshplan::sim
