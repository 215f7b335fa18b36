// A run's measured timeline (executor/timing/timeline.h) on hand-made op times. Two ranks:
//   rank 0: compute [0, 1], send [1, 3] (send stream), compute [3, 4]
//   rank 1: recv [0, 2.5] (recv stream), compute [2.5, 5]
// compute = compute-stream busy time: rank 0 1 + 1 = 2, rank 1 2.5; last op ends 4 and 5, so the
// run ends at 5; exposed = last end - compute: 2 and 2.5; idle = 5 - last end: 1 and 0.
#include "executor/timing/timeline.h"

#include <gtest/gtest.h>

namespace meshplan::exec {
namespace {

Op OpOnStream(StreamId stream) {
  Op op;
  op.stream = stream;
  op.kind = stream == StreamId::kCompute ? OpKind::kCompute
            : stream == StreamId::kSend  ? OpKind::kSend
                                         : OpKind::kRecv;
  return op;
}

TEST(Timeline, ComputeExposedAndIdlePerRankAsTheSimulatorDefinesThem) {
  Schedule s;
  s.num_ranks = 2;
  s.ranks.resize(2);
  s.ranks[0].Add(OpOnStream(StreamId::kCompute));
  s.ranks[0].Add(OpOnStream(StreamId::kSend));
  s.ranks[0].Add(OpOnStream(StreamId::kCompute));
  s.ranks[1].Add(OpOnStream(StreamId::kRecv));
  s.ranks[1].Add(OpOnStream(StreamId::kCompute));
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

TEST(Timeline, KeepsEachRanksTimesAndTheOpClasses) {
  // The schedule and times of the test above: per rank, compute 2 and 2.5, exposed 2 and 2.5,
  // idle 1 and 0; busy = compute + exposed = the rank's last op end, 4 and 5.
  Schedule s;
  s.num_ranks = 2;
  s.ranks.resize(2);
  s.ranks[0].Add(OpOnStream(StreamId::kCompute));
  s.ranks[0].Add(OpOnStream(StreamId::kSend));
  s.ranks[0].Add(OpOnStream(StreamId::kCompute));
  s.ranks[1].Add(OpOnStream(StreamId::kRecv));
  s.ranks[1].Add(OpOnStream(StreamId::kCompute));
  const std::vector<std::vector<OpTiming>> times = {{{0, 1}, {1, 3}, {3, 4}}, {{0, 2.5}, {2.5, 5}}};
  const RunTimeline t = MeasureTimeline(s, times);
  ASSERT_EQ(t.ranks.size(), 2u);
  EXPECT_DOUBLE_EQ(t.ranks[0].compute_s, 2);
  EXPECT_DOUBLE_EQ(t.ranks[0].exposed_comm_s, 2);
  EXPECT_DOUBLE_EQ(t.ranks[0].idle_s, 1);
  EXPECT_DOUBLE_EQ(t.ranks[0].BusyS(), 4);
  EXPECT_DOUBLE_EQ(t.ranks[1].compute_s, 2.5);
  EXPECT_DOUBLE_EQ(t.ranks[1].exposed_comm_s, 2.5);
  EXPECT_DOUBLE_EQ(t.ranks[1].idle_s, 0);
  EXPECT_DOUBLE_EQ(t.ranks[1].BusyS(), 5);
  // Per class (all forward): compute 1 + 1 + 2.5 = 4.5 over 3 ops, send 2, recv 2.5.
  ASSERT_TRUE(t.op_classes.has_value());
  const OpClassTable& c = *t.op_classes;
  EXPECT_DOUBLE_EQ(c[static_cast<size_t>(OpClass::kComputeForward)].sum_s, 4.5);
  EXPECT_EQ(c[static_cast<size_t>(OpClass::kComputeForward)].ops, 3);
  EXPECT_DOUBLE_EQ(c[static_cast<size_t>(OpClass::kSend)].sum_s, 2);
  EXPECT_DOUBLE_EQ(c[static_cast<size_t>(OpClass::kRecv)].sum_s, 2.5);
}

TEST(Timeline, ComputeCountsAnOpFromWhenItsStreamWasFree) {
  // One rank, two compute ops: the second's deps were met at 0.5 but the stream ran the first
  // until 1; it ends at 3. Busy time: [0, 1] + [1, 3] = 3 (not 1 + 2.5 = 3.5, which would count
  // [0.5, 1] twice). Last end 3: exposed 3 - 3 = 0.
  Schedule s;
  s.num_ranks = 1;
  s.ranks.resize(1);
  s.ranks[0].Add(OpOnStream(StreamId::kCompute));
  s.ranks[0].Add(OpOnStream(StreamId::kCompute));
  const RunTimeline t = MeasureTimeline(s, {{{0, 1}, {0.5, 3}}});
  ASSERT_EQ(t.ranks.size(), 1u);
  EXPECT_DOUBLE_EQ(t.ranks[0].compute_s, 3);
  EXPECT_DOUBLE_EQ(t.ranks[0].exposed_comm_s, 0);
  EXPECT_DOUBLE_EQ(t.compute.max, 3);
}

TEST(Timeline, TimelineOfRanksTakesTheSpreads) {
  // compute 1, 2, 6: min 1, mean 3, max 6; exposed 0, 0, 3: mean 1; idle 4, 2, 0: mean 2.
  const RunTimeline t = TimelineOfRanks(9, {{1, 0, 4}, {2, 0, 2}, {6, 3, 0}}, std::nullopt);
  EXPECT_DOUBLE_EQ(t.run_s, 9);
  EXPECT_DOUBLE_EQ(t.compute.min, 1);
  EXPECT_DOUBLE_EQ(t.compute.mean, 3);
  EXPECT_DOUBLE_EQ(t.compute.max, 6);
  EXPECT_DOUBLE_EQ(t.exposed.mean, 1);
  EXPECT_DOUBLE_EQ(t.idle.mean, 2);
  EXPECT_EQ(t.ranks.size(), 3u);
  EXPECT_FALSE(t.op_classes.has_value());
}

TEST(Timeline, NoRanksIsAllZero) {
  const RunTimeline t = MeasureTimeline(Schedule{}, {});
  EXPECT_EQ(t.run_s, 0);
  EXPECT_EQ(t.compute.max, 0);
  EXPECT_TRUE(t.ranks.empty());
}

}  // namespace
}  // namespace meshplan::exec
