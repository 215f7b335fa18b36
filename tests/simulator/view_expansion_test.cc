// The timing view made during the expansion (SimulatePlan without op times: CoalescingSink fed by
// ExpandPlan's rank hook, replayed by SimulateView) against the view made after it from the full
// schedule (Simulate(Schedule&&)): a rank's view depends on its own program only, so the two
// replays are the same computation and must agree bit for bit, for the best plans of every
// scheme, mask and pass on a shipped 32-GPU cluster. Also: ExpandPlan hands every rank to the
// hook exactly once, during the expansion for Mesh and after it for the others. And the view's
// replay form made during the expansion (ReplayViewSink, SimulateReplayView) against the view's
// 72-byte ops replayed (CoalescingSink, SimulateView), over the same plans.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/cluster/topology_toml.h"
#include "planner/context.h"
#include "planner/plan_schedule.h"
#include "planner/schemes/registry.h"
#include "planner/search.h"
#include "simulator/coalesce.h"
#include "simulator/plan_simulation.h"
#include "simulator/replay_program.h"
#include "simulator/replay_view.h"
#include "simulator/simulate.h"
#include "tests/simulator/top_plans.h"

namespace meshplan::sim {
namespace {

Topology LoadShipped(const std::string& name) {
  auto topology = LoadTopologyFile(std::string(MESHPLAN_SOURCE_DIR) + "/topologies/" + name);
  EXPECT_TRUE(topology.ok()) << topology.status().message();
  return *topology;
}

void ExpectSameResult(const SimResult& a, const SimResult& b, const std::string& what) {
  EXPECT_EQ(a.total_s, b.total_s) << what;
  EXPECT_EQ(a.events, b.events) << what;
  EXPECT_EQ(a.flows, b.flows) << what;
  EXPECT_EQ(a.critical_path, b.critical_path) << what;
  ASSERT_EQ(a.ranks.size(), b.ranks.size()) << what;
  for (size_t r = 0; r < a.ranks.size(); ++r) {
    EXPECT_EQ(a.ranks[r].compute_s, b.ranks[r].compute_s) << what << " rank " << r;
    EXPECT_EQ(a.ranks[r].exposed_comm_s, b.ranks[r].exposed_comm_s) << what << " rank " << r;
    EXPECT_EQ(a.ranks[r].idle_s, b.ranks[r].idle_s) << what << " rank " << r;
    EXPECT_EQ(a.ranks[r].bytes_sent, b.ranks[r].bytes_sent) << what << " rank " << r;
  }
  ASSERT_EQ(a.levels.size(), b.levels.size()) << what;
  for (size_t l = 0; l < a.levels.size(); ++l) {
    EXPECT_EQ(a.levels[l].bytes, b.levels[l].bytes) << what;
    EXPECT_EQ(a.levels[l].utilization, b.levels[l].utilization) << what;
    EXPECT_EQ(a.levels[l].busiest_link, b.levels[l].busiest_link) << what;
    EXPECT_EQ(a.levels[l].busiest_link_bytes, b.levels[l].busiest_link_bytes) << what;
  }
}

TEST(ViewExpansion, ViewMadeDuringExpansionReplaysLikeTheFullSchedulesView) {
  const Topology topology = LoadShipped("dgx-h100-4node.toml");
  const int compared = testing::ForEachTopPlan(topology, [&](const Plan& plan, const Workload& w,
                                                             const std::string& what) {
    SimOptions options;
    options.record_op_times = false;
    options.use_symmetry = false;  // every rank's view (symmetry classes: rank_symmetry_test.cc)
    auto streamed = SimulatePlan(plan, topology, options);
    ASSERT_TRUE(streamed.ok()) << what << ": " << streamed.status().message();
    auto full = planner::ExpandPlan(plan, topology);
    ASSERT_TRUE(full.ok()) << what;
    auto after = Simulate(std::move(full->schedule), topology, full->rank_to_gpu, w.dtype, options);
    ASSERT_TRUE(after.ok()) << what;
    ExpectSameResult(streamed->result, *after, what);
  });
  EXPECT_GE(compared, 80);
}

TEST(ViewExpansion, TheReplayFormMadeDuringTheExpansionReplaysLikeTheViewsOps) {
  const Topology topology = LoadShipped("dgx-h100-4node.toml");
  const int compared = testing::ForEachTopPlan(topology, [&](const Plan& plan, const Workload& w,
                                                             const std::string& what) {
    SimOptions options;
    options.record_op_times = false;
    CoalescingSink views(topology.num_gpus());
    auto expanded = planner::ExpandPlan(plan, topology, [&](int64_t rank, RankProgram& program) {
      views.Take(rank, program);
      return true;
    });
    ASSERT_TRUE(expanded.ok()) << what;
    auto from_ops = SimulateView(views.Finish(std::move(expanded->schedule)), topology,
                                 expanded->rank_to_gpu, w.dtype, options);
    ASSERT_TRUE(from_ops.ok()) << what << ": " << from_ops.status().message();
    ReplayViewSink forms(topology.num_gpus());
    auto again = planner::ExpandPlan(plan, topology, [&](int64_t rank, RankProgram& program) {
      forms.Take(rank, program);
      return true;
    });
    ASSERT_TRUE(again.ok()) << what;
    for (const RankProgram& program : again->schedule.ranks)
      EXPECT_TRUE(program.ops.empty()) << what;
    auto form = forms.Finish(std::move(again->schedule));
    ASSERT_TRUE(form.ok()) << what << ": " << form.status().message();
    auto from_form =
        SimulateReplayView(std::move(form).value(), topology, again->rank_to_gpu, w.dtype, options);
    ASSERT_TRUE(from_form.ok()) << what << ": " << from_form.status().message();
    ExpectSameResult(*from_ops, *from_form, what);
  });
  EXPECT_GE(compared, 80);
}

TEST(ViewExpansion, TheReplayFormRejectsMalformedProgramsAndTheSinkReportsIt) {
  RankProgram program;
  Op compute;
  const uint32_t first = program.Add(compute);
  Op send;
  send.kind = OpKind::kSend;
  send.stream = StreamId::kSend;
  send.peer = 2;  // of 2 ranks: out of range
  program.Add(send, {first});
  auto bad_peer = MakeReplayProgram(program, 0, 2);
  ASSERT_FALSE(bad_peer.ok());
  EXPECT_NE(bad_peer.status().message().find("rank 0 op 1: peer out of range"), std::string::npos)
      << bad_peer.status().message();
  RankProgram forward = program;
  forward.ops[1].peer = 1;
  forward.deps[0] = 1;  // op 1 waits on itself
  auto bad_dep = MakeReplayProgram(forward, 0, 2);
  ASSERT_FALSE(bad_dep.ok());
  EXPECT_NE(bad_dep.status().message().find("dep does not point back"), std::string::npos);

  ReplayViewSink sink(2);
  Schedule schedule;
  schedule.num_ranks = 2;
  schedule.ranks = {program, RankProgram{}};
  sink.Take(0, schedule.ranks[0]);
  sink.Take(1, schedule.ranks[1]);
  EXPECT_TRUE(schedule.ranks[0].ops.empty());
  const auto finished = sink.Finish(std::move(schedule));
  ASSERT_FALSE(finished.ok());
  EXPECT_NE(finished.status().message().find("peer out of range"), std::string::npos);
}

TEST(ViewExpansion, ExpandPlanHandsEveryRankToTheHookOnce) {
  const Topology topology = LoadShipped("dgx-h100-4node.toml");
  Workload w = Workload::Default();
  w.seq_len = 1 << 15;
  const planner::PlanContext ctx(w, topology);
  for (Scheme scheme :
       {Scheme("mesh"), Scheme("mesh-ulysses"), Scheme("ring"), Scheme("attention2d")}) {
    planner::SearchOptions only;
    only.schemes = {scheme};
    const planner::SearchResult found = planner::Search(ctx, only);
    ASSERT_FALSE(found.ranked.empty());
    const Plan plan = planner::MakePlan(ctx, found.ranked[0].params);
    std::vector<int> calls(static_cast<size_t>(topology.num_gpus()), 0);
    std::vector<size_t> ops(calls.size(), 0);
    auto expanded = planner::ExpandPlan(plan, topology, [&](int64_t rank, RankProgram& program) {
      ++calls[static_cast<size_t>(rank)];
      ops[static_cast<size_t>(rank)] = program.ops.size();
      program = RankProgram{};  // replaced: ExpandPlan must keep what the hook left
      return true;
    });
    ASSERT_TRUE(expanded.ok()) << SchemeName(scheme);
    for (size_t r = 0; r < calls.size(); ++r) {
      EXPECT_EQ(calls[r], 1) << SchemeName(scheme) << " rank " << r;
      EXPECT_GT(ops[r], 0u) << SchemeName(scheme) << " rank " << r;  // a complete program
      EXPECT_TRUE(expanded->schedule.ranks[r].ops.empty()) << SchemeName(scheme) << " rank " << r;
    }
  }
}

TEST(ViewExpansion, SimulateViewRefusesOpTimesAndSharedDevices) {
  CoalescedSchedule view;
  view.schedule.num_ranks = 0;
  const Topology topology = LoadShipped("dgx-h100-4node.toml");
  SimOptions with_times;
  EXPECT_FALSE(SimulateView(CoalescedSchedule{}, topology, {}, DType::kBf16, with_times).ok());
  Topology shared = topology;
  shared.gpu.ranks_per_device = 2;
  SimOptions without_times;
  without_times.record_op_times = false;
  EXPECT_FALSE(SimulateView(std::move(view), shared, {}, DType::kBf16, without_times).ok());
}

}  // namespace
}  // namespace meshplan::sim
