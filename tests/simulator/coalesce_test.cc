// The timing view (simulator/coalesce.h) against the plain replay: for the best plans of every
// scheme, masks and passes on a shipped 32-GPU cluster, the replay of the merged schedule gives
// the same end time, per-rank breakdown, bytes and op times as the replay of every op, up to the
// nanosecond of rounding each merged op may carry; and it merges something where runs exist.
#include "simulator/coalesce.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/cluster/topology_toml.h"
#include "planner/schemes/registry.h"
#include "planner/search.h"
#include "planner/strategy.h"
#include "simulator/simulate.h"

namespace meshplan::sim {
namespace {

Op Compute(Phase phase, double flops) {
  Op op;
  op.kind = OpKind::kCompute;
  op.phase = phase;
  op.flops = flops;
  return op;
}

Op Message(OpKind kind, int32_t peer) {
  Op op;
  op.kind = kind;
  op.stream = kind == OpKind::kSend ? StreamId::kSend : StreamId::kRecv;
  op.peer = peer;
  op.bytes = 1000;
  op.tensors = kTensorKV;
  return op;
}

TEST(Coalesce, MergesBlocksWhoseInputsArrivedBeforeTheRunAndStopsAtAMessage) {
  // Rank 0: recv A (0); blocks 1, 2 need A; recv B (3); block 4 needs A and B; block 5 needs A
  // (known at 4's start); a send (6) of block 5's result.
  //   1 and 2 merge (2 needs only A, a dependency of 1);
  //   4 cannot join 1-2 (B is no dependency of any op before it on the stream);
  //   5 joins 4 (A is known: a dependency of 1);
  //   the send depends on 5, the run's tail: fine.
  RankProgram p;
  const uint32_t a = p.Add(Message(OpKind::kRecv, 1));
  const uint32_t b1 = p.Add(Compute(Phase::kForward, 10), {a});
  p.Add(Compute(Phase::kForward, 20), {a, b1});
  const uint32_t b = p.Add(Message(OpKind::kRecv, 1));
  const uint32_t b4 = p.Add(Compute(Phase::kForward, 30), {a, b});
  const uint32_t b5 = p.Add(Compute(Phase::kForward, 40), {a});
  p.Add(Message(OpKind::kSend, 1), {b5});
  (void)b4;
  Schedule s;
  s.num_ranks = 1;
  s.ranks = {p};
  const CoalescedSchedule c = CoalesceCompute(s);
  ASSERT_EQ(c.schedule.ranks[0].ops.size(), 5u);
  EXPECT_EQ(c.merged_ops, 2);
  const auto& ops = c.schedule.ranks[0].ops;
  EXPECT_EQ(ops[1].flops, 30);
  EXPECT_EQ(ops[1].kernels, 2);
  EXPECT_EQ(ops[3].flops, 70);
  EXPECT_EQ(ops[3].kernels, 2);
  // The send now waits for the merged op 3.
  EXPECT_EQ(ops[4].dep_count, 1u);
  EXPECT_EQ(c.schedule.ranks[0].deps[ops[4].dep_begin], 3u);
  // Origins: merged op 1 = original 1, 2; merged op 3 = original 4, 5.
  const std::vector<uint32_t> begin = {0, 1, 3, 4, 6, 7};
  const std::vector<uint32_t> origin = {0, 1, 2, 3, 4, 5, 6};
  EXPECT_EQ(c.begin[0], begin);
  EXPECT_EQ(c.origin[0], origin);
}

TEST(Coalesce, ABlockSomethingElseWaitsOnEndsItsRun) {
  // Block 1's result is sent (op 3) before block 2 runs: merging 1 and 2 would delay the send.
  RankProgram p;
  const uint32_t b1 = p.Add(Compute(Phase::kForward, 10));
  p.Add(Compute(Phase::kForward, 20), {b1});
  p.Add(Message(OpKind::kSend, 1), {b1});
  Schedule s;
  s.num_ranks = 1;
  s.ranks = {p};
  EXPECT_EQ(CoalesceCompute(s).merged_ops, 0);
  // A forward and a backward block never merge (different rates).
  RankProgram q;
  q.Add(Compute(Phase::kForward, 10));
  q.Add(Compute(Phase::kBackward, 20));
  s.ranks = {q};
  EXPECT_EQ(CoalesceCompute(s).merged_ops, 0);
}

TEST(Coalesce, ABlockJoinsWhenEverythingWaitingOnTheTailWaitsOnItToo) {
  // Blocks 0, 1, 2 and a send that waits on all three (deps listed out of order, one twice), and
  // a second send that waits on block 0 and a later op: the check walks the ops waiting on the
  // run's tail against those waiting on the block (coalesce.cc).
  RankProgram p;
  const uint32_t b0 = p.Add(Compute(Phase::kForward, 10));
  const uint32_t b1 = p.Add(Compute(Phase::kForward, 20));
  const uint32_t b2 = p.Add(Compute(Phase::kForward, 30));
  p.Add(Message(OpKind::kSend, 1), {b2, b0, b1, b0});
  Schedule s;
  s.num_ranks = 1;
  s.ranks = {p};
  {
    const CoalescedSchedule c = CoalesceCompute(s);
    EXPECT_EQ(c.merged_ops, 2);  // one op of 60 FLOPs, then the send
    ASSERT_EQ(c.schedule.ranks[0].ops.size(), 2u);
    EXPECT_EQ(c.schedule.ranks[0].ops[0].flops, 60);
  }
  // Block 1 cannot join block 0: the send waits on block 0 but not on block 1 (it waits on a
  // later one). Block 2 joins block 1 (nothing waits on block 1).
  RankProgram q;
  const uint32_t c0 = q.Add(Compute(Phase::kForward, 10));
  q.Add(Compute(Phase::kForward, 20));
  const uint32_t c2 = q.Add(Compute(Phase::kForward, 30));
  q.Add(Message(OpKind::kSend, 1), {c2, c0});
  s.ranks = {q};
  {
    const CoalescedSchedule c = CoalesceCompute(s);
    EXPECT_EQ(c.merged_ops, 1);
    ASSERT_EQ(c.schedule.ranks[0].ops.size(), 3u);
    EXPECT_EQ(c.schedule.ranks[0].ops[0].flops, 10);
    EXPECT_EQ(c.schedule.ranks[0].ops[1].flops, 50);
  }
}

TEST(Coalesce, TheTimingViewReplaysLikeEveryOp) {
  auto topology =
      LoadTopologyFile(std::string(MESHPLAN_SOURCE_DIR) + "/topologies/dgx-h100-4node.toml");
  ASSERT_TRUE(topology.ok()) << topology.status().message();
  int compared = 0;
  int64_t merged = 0;
  for (const Mask& mask : {Mask::Full(), Mask::Causal(), Mask::Window(4096)}) {
    for (Pass pass : {Pass::kForward, Pass::kForwardBackward}) {
      Workload w = Workload::Default();
      w.seq_len = 1 << 15;
      w.mask = mask;
      w.pass = pass;
      const planner::PlanContext ctx(w, *topology);
      for (Scheme scheme : planner::AllSchemes()) {
        planner::SearchOptions only;
        only.schemes = {scheme};
        const planner::SearchResult found = planner::Search(ctx, only);
        for (size_t k = 0; k < found.ranked.size() && k < 4; ++k) {
          const planner::Estimate& e = found.ranked[k];
          auto schedule = planner::MakeStrategy(scheme)->Expand(ctx, e.params);
          ASSERT_TRUE(schedule.ok()) << schedule.status().message();
          const Placement placement(planner::RankDims(e.params), e.params.placement);
          std::vector<int64_t> gpu(ctx.num_ranks);
          for (int64_t r = 0; r < ctx.num_ranks; ++r) gpu[r] = placement.GpuOf(r);
          SimOptions plain;
          plain.coalesce_compute = false;
          SimOptions view;
          auto a = Simulate(*schedule, *topology, gpu, w.dtype, plain);
          auto b = Simulate(*schedule, *topology, gpu, w.dtype, view);
          ASSERT_TRUE(a.ok() && b.ok());
          const int64_t m = CoalesceCompute(*schedule).merged_ops;
          merged += m;
          // Each merged op rounds its summed kernel time once where the blocks rounded each:
          // at most one nanosecond per merged block on any chain of ops.
          const double slack_s = (static_cast<double>(m) + 1) * 1e-9;
          const std::string what =
              std::string(SchemeName(scheme)) + " " + planner::DescribeParams(e.params) + " " +
              std::string(PassName(pass)) + " mask " + std::to_string(static_cast<int>(mask.kind));
          EXPECT_NEAR(b->total_s, a->total_s, slack_s) << what;
          ASSERT_EQ(a->ranks.size(), b->ranks.size());
          for (size_t r = 0; r < a->ranks.size(); ++r) {
            EXPECT_NEAR(b->ranks[r].compute_s, a->ranks[r].compute_s, slack_s)
                << what << " rank " << r;
            EXPECT_NEAR(b->ranks[r].idle_s, a->ranks[r].idle_s, slack_s) << what << " rank " << r;
            EXPECT_EQ(b->ranks[r].bytes_sent, a->ranks[r].bytes_sent) << what;
          }
          for (size_t l = 0; l < a->levels.size(); ++l)
            EXPECT_EQ(b->levels[l].bytes, a->levels[l].bytes) << what;
          EXPECT_EQ(a->flows, b->flows) << what;
          ASSERT_EQ(a->op_times.size(), b->op_times.size());
          for (size_t r = 0; r < a->op_times.size(); ++r) {
            ASSERT_EQ(a->op_times[r].size(), b->op_times[r].size());
            for (size_t i = 0; i < a->op_times[r].size(); ++i) {
              EXPECT_LE(std::llabs(a->op_times[r][i].end - b->op_times[r][i].end), m + 1)
                  << what << " op " << i;
              if (HasFailure()) return;
            }
          }
          EXPECT_LE(b->events, a->events) << what;
          ++compared;
        }
      }
    }
  }
  EXPECT_GE(compared, 100);
  EXPECT_GT(merged, 0);  // Mesh and the rings have runs of blocks
}

}  // namespace
}  // namespace meshplan::sim
