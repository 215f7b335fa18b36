// An op's duration (executor/timing/op_durations.h): end - max(start, end of the previous op on the
// same stream of the rank), on hand-made times.
#include "executor/timing/op_durations.h"

#include <gtest/gtest.h>

namespace meshplan::exec {
namespace {

Op OnStream(StreamId stream) {
  Op op;
  op.stream = stream;
  return op;
}

TEST(OpDurations, AnOpWaitingForItsStreamCountsFromThePreviousOpsEnd) {
  RankProgram p;
  p.Add(OnStream(StreamId::kCompute));  // 0: [0, 2]
  p.Add(OnStream(StreamId::kSend));     // 1: [0.5, 1.5]
  p.Add(OnStream(StreamId::kCompute));  // 2: deps met at 1, stream free at 2, ends 5
  p.Add(OnStream(StreamId::kSend));     // 3: deps met at 1, stream free at 1.5, ends 2
  p.Add(OnStream(StreamId::kCompute));  // 4: deps met at 6 (after the stream's 5), ends 6.5
  const std::vector<OpTiming> times = {{0, 2}, {0.5, 1.5}, {1, 5}, {1, 2}, {6, 6.5}};
  // 0: 2 - 0 = 2; 1: 1.5 - 0.5 = 1; 2: 5 - max(1, 2) = 3; 3: 2 - max(1, 1.5) = 0.5;
  // 4: 6.5 - max(6, 5) = 0.5.
  const std::vector<double> d = OpDurationsS(p, times);
  ASSERT_EQ(d.size(), 5u);
  EXPECT_DOUBLE_EQ(d[0], 2);
  EXPECT_DOUBLE_EQ(d[1], 1);
  EXPECT_DOUBLE_EQ(d[2], 3);
  EXPECT_DOUBLE_EQ(d[3], 0.5);
  EXPECT_DOUBLE_EQ(d[4], 0.5);
  // The compute stream's durations add up to its busy time: [0, 2] and [2, 5] and [6, 6.5] = 5.5.
  EXPECT_DOUBLE_EQ(d[0] + d[2] + d[4], 5.5);
}

TEST(OpDurations, OpsWithoutATimeHaveNoDurationAndNegativeIntervalsCountZero) {
  RankProgram p;
  p.Add(OnStream(StreamId::kRecv));
  p.Add(OnStream(StreamId::kRecv));
  p.Add(OnStream(StreamId::kRecv));
  // Op 1 "ends" at 2, before the stream's previous op ended (3): max(0, 2 - 3) = 0. Op 2 has no
  // time.
  const std::vector<double> d = OpDurationsS(p, {{0, 3}, {1, 2}});
  ASSERT_EQ(d.size(), 2u);
  EXPECT_DOUBLE_EQ(d[0], 3);
  EXPECT_DOUBLE_EQ(d[1], 0);
}

}  // namespace
}  // namespace meshplan::exec
