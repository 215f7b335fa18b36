// Per-op-class sums (executor/timing/op_class_times.h) on a hand-made two-rank schedule, measured
// and "predicted" times through the one function, and their signed errors.
#include "executor/timing/op_class_times.h"

#include <gtest/gtest.h>

#include "executor/timing/repeat.h"

namespace meshplan::exec {
namespace {

Op MakeOp(OpKind kind, Phase phase, StreamId stream) {
  Op op;
  op.kind = kind;
  op.phase = phase;
  op.stream = stream;
  return op;
}

// rank 0: compute fwd, send, compute bwd, merge bwd
// rank 1: recv, merge fwd, compute bwd, all-gather
Schedule TwoRanks() {
  Schedule s;
  s.num_ranks = 2;
  s.ranks.resize(2);
  s.ranks[0].Add(MakeOp(OpKind::kCompute, Phase::kForward, StreamId::kCompute));
  s.ranks[0].Add(MakeOp(OpKind::kSend, Phase::kForward, StreamId::kSend));
  s.ranks[0].Add(MakeOp(OpKind::kCompute, Phase::kBackward, StreamId::kCompute));
  s.ranks[0].Add(MakeOp(OpKind::kMerge, Phase::kBackward, StreamId::kCompute));
  s.ranks[1].Add(MakeOp(OpKind::kRecv, Phase::kForward, StreamId::kRecv));
  s.ranks[1].Add(MakeOp(OpKind::kMerge, Phase::kForward, StreamId::kCompute));
  s.ranks[1].Add(MakeOp(OpKind::kCompute, Phase::kBackward, StreamId::kCompute));
  s.ranks[1].Add(MakeOp(OpKind::kAllGather, Phase::kBackward, StreamId::kCollective));
  return s;
}

const OpClassTimes& Of(const OpClassTable& t, OpClass c) { return t[static_cast<size_t>(c)]; }

TEST(OpClassTimes, ClassesSplitComputeAndMergeByPhase) {
  EXPECT_EQ(ClassOf(MakeOp(OpKind::kCompute, Phase::kForward, StreamId::kCompute)),
            OpClass::kComputeForward);
  EXPECT_EQ(ClassOf(MakeOp(OpKind::kCompute, Phase::kBackward, StreamId::kCompute)),
            OpClass::kComputeBackward);
  EXPECT_EQ(ClassOf(MakeOp(OpKind::kMerge, Phase::kForward, StreamId::kCompute)),
            OpClass::kMergeForward);
  EXPECT_EQ(ClassOf(MakeOp(OpKind::kMerge, Phase::kBackward, StreamId::kCompute)),
            OpClass::kMergeBackward);
  // Communication is one class per kind whatever its phase.
  EXPECT_EQ(ClassOf(MakeOp(OpKind::kSend, Phase::kBackward, StreamId::kSend)), OpClass::kSend);
  EXPECT_EQ(ClassOf(MakeOp(OpKind::kReduceScatter, Phase::kForward, StreamId::kCollective)),
            OpClass::kReduceScatter);
  EXPECT_EQ(ClassOf(MakeOp(OpKind::kAllToAll, Phase::kForward, StreamId::kCollective)),
            OpClass::kAllToAll);
  EXPECT_EQ(OpClassName(OpClass::kComputeBackward), "compute bwd");
  EXPECT_EQ(OpClassName(OpClass::kMergeForward), "merge fwd");
  EXPECT_EQ(OpClassName(OpClass::kAllToAll), "all-to-all");
  EXPECT_EQ(kNumOpClasses, 9u);
}

TEST(OpClassTimes, SumsOverRanksOfDurationsAndCounts) {
  const Schedule s = TwoRanks();
  // Measured. rank 0: compute fwd [0, 1]; send [1, 4]; compute bwd deps met at 1, compute stream
  //   free at 1, ends 3 -> 2; merge bwd [3, 3.5] -> 0.5.
  // rank 1: recv [0, 4]; merge fwd [4, 4.25] -> 0.25; compute bwd deps met 4, stream free at
  //   4.25, ends 6.25 -> 2; all-gather [6.25, 7] -> 0.75.
  const std::vector<std::vector<OpTiming>> measured = {{{0, 1}, {1, 4}, {1, 3}, {3, 3.5}},
                                                       {{0, 4}, {4, 4.25}, {4, 6.25}, {6.25, 7}}};
  const OpClassTable m = OpClassTimesOf(s, measured);
  EXPECT_DOUBLE_EQ(Of(m, OpClass::kComputeForward).sum_s, 1);
  EXPECT_EQ(Of(m, OpClass::kComputeForward).ops, 1);
  EXPECT_DOUBLE_EQ(Of(m, OpClass::kComputeBackward).sum_s, 2 + 2);  // rank 0 and rank 1
  EXPECT_EQ(Of(m, OpClass::kComputeBackward).ops, 2);
  EXPECT_DOUBLE_EQ(Of(m, OpClass::kMergeForward).sum_s, 0.25);
  EXPECT_DOUBLE_EQ(Of(m, OpClass::kMergeBackward).sum_s, 0.5);
  EXPECT_DOUBLE_EQ(Of(m, OpClass::kSend).sum_s, 3);
  EXPECT_DOUBLE_EQ(Of(m, OpClass::kRecv).sum_s, 4);
  EXPECT_DOUBLE_EQ(Of(m, OpClass::kAllGather).sum_s, 0.75);
  EXPECT_EQ(Of(m, OpClass::kAllGather).ops, 1);
  EXPECT_EQ(Of(m, OpClass::kReduceScatter).ops, 0);
  EXPECT_DOUBLE_EQ(Of(m, OpClass::kReduceScatter).sum_s, 0);
  EXPECT_EQ(Of(m, OpClass::kAllToAll).ops, 0);

  // Predicted (as the simulator times it: every op starts when its stream is free), everything
  // half as long: compute fwd 0.5, compute bwd 1 + 1, send 1.5, all-gather 0.375.
  const std::vector<std::vector<OpTiming>> predicted = {
      {{0, 0.5}, {0.5, 2}, {0.5, 1.5}, {1.5, 1.75}},
      {{0, 2}, {2, 2.125}, {2.125, 3.125}, {3.125, 3.5}}};
  const OpClassTable p = OpClassTimesOf(s, predicted);
  EXPECT_DOUBLE_EQ(Of(p, OpClass::kComputeBackward).sum_s, 2);
  EXPECT_EQ(Of(p, OpClass::kComputeBackward).ops, 2);
  // Signed error of measured against predicted: (4 - 2) / 2 = +100%; send (3 - 1.5) / 1.5 = +100%.
  EXPECT_DOUBLE_EQ(
      ErrorPercent(Of(m, OpClass::kComputeBackward).sum_s, Of(p, OpClass::kComputeBackward).sum_s),
      100);
  EXPECT_DOUBLE_EQ(ErrorPercent(Of(m, OpClass::kSend).sum_s, Of(p, OpClass::kSend).sum_s), 100);
  EXPECT_DOUBLE_EQ(ErrorPercent(Of(m, OpClass::kAllGather).sum_s, Of(p, OpClass::kAllGather).sum_s),
                   100);
}

TEST(OpClassTimes, OpsWithoutTimesAreNotCounted) {
  const Schedule s = TwoRanks();
  // Rank 1 has no times at all, rank 0 only its first two ops: compute fwd 1, send 3.
  const OpClassTable t = OpClassTimesOf(s, {{{0, 1}, {1, 4}}});
  EXPECT_EQ(Of(t, OpClass::kComputeForward).ops, 1);
  EXPECT_EQ(Of(t, OpClass::kSend).ops, 1);
  EXPECT_EQ(Of(t, OpClass::kComputeBackward).ops, 0);
  EXPECT_EQ(Of(t, OpClass::kRecv).ops, 0);
  EXPECT_DOUBLE_EQ(Of(t, OpClass::kSend).sum_s, 3);
}

}  // namespace
}  // namespace meshplan::exec
