// A run's measured timeline (executor/timeline.h) on hand-made op times. Two ranks:
//   rank 0: compute [0, 1], send [1, 3] (send stream), compute [3, 4]
//   rank 1: recv [0, 2.5] (recv stream), compute [2.5, 5]
// compute = compute-stream busy time: rank 0 1 + 1 = 2, rank 1 2.5; last op ends 4 and 5, so the
// run ends at 5; exposed = last end - compute: 2 and 2.5; idle = 5 - last end: 1 and 0.
#include "executor/timeline.h"

#include <gtest/gtest.h>

namespace meshplan::exec {
namespace {

Op OnStream(StreamId stream) {
  Op op;
  op.stream = stream;
  op.kind = stream == StreamId::kCompute ? OpKind::kCompute : stream == StreamId::kSend ? OpKind::kSend : OpKind::kRecv;
  return op;
}

TEST(Timeline, ComputeExposedAndIdlePerRankAsTheSimulatorDefinesThem) {
  Schedule s;
  s.num_ranks = 2;
  s.ranks.resize(2);
  s.ranks[0].Add(OnStream(StreamId::kCompute));
  s.ranks[0].Add(OnStream(StreamId::kSend));
  s.ranks[0].Add(OnStream(StreamId::kCompute));
  s.ranks[1].Add(OnStream(StreamId::kRecv));
  s.ranks[1].Add(OnStream(StreamId::kCompute));
  const std::vector<std::vector<OpTiming>> times = {{{0, 1}, {1, 3}, {3, 4}}, {{0, 2.5}, {2.5, 5}}};
  const RunTimeline t = MeasureTimeline(s, times);
  EXPECT_DOUBLE_EQ(t.run_s, 5);
  EXPECT_DOUBLE_EQ(t.compute.min, 2);
  EXPECT_DOUBLE_EQ(t.compute.mean, 2.25);
  EXPECT_DOUBLE_EQ(t.compute.max, 2.5);
  EXPECT_DOUBLE_EQ(t.exposed.min, 2);
  EXPECT_DOUBLE_EQ(t.exposed.mean, 2.25);
  EXPECT_DOUBLE_EQ(t.exposed.max, 2.5);
  EXPECT_DOUBLE_EQ(t.idle.min, 0);
  EXPECT_DOUBLE_EQ(t.idle.mean, 0.5);
  EXPECT_DOUBLE_EQ(t.idle.max, 1);
}

TEST(Timeline, NoRanksIsAllZero) {
  const RunTimeline t = MeasureTimeline(Schedule{}, {});
  EXPECT_EQ(t.run_s, 0);
  EXPECT_EQ(t.compute.max, 0);
}

}  // namespace
}  // namespace meshplan::exec
