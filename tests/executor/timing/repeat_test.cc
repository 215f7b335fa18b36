// Benchmark runs (executor/timing/repeat.h): the median, min, max and spread of hand-made run
// times, the median run, the error against a prediction, the accepted repeat counts, and a summary
// of runs from their op times.
#include "executor/timing/repeat.h"

#include <gtest/gtest.h>

namespace meshplan::exec {
namespace {

TEST(Repeat, OddCountTakesTheMiddleTime) {
  // Sorted: 10, 20, 30, 40, 50 ms; the middle one, 30 ms, is run 0.
  const RepeatStats s = RepeatStatsOf({0.030, 0.010, 0.020, 0.050, 0.040});
  EXPECT_EQ(s.n, 5);
  EXPECT_DOUBLE_EQ(s.median_s, 0.030);
  EXPECT_DOUBLE_EQ(s.min_s, 0.010);
  EXPECT_DOUBLE_EQ(s.max_s, 0.050);
  EXPECT_DOUBLE_EQ(s.spread, (0.050 - 0.010) / 0.030);  // 4/3
  EXPECT_EQ(s.median_run, 0u);
}

TEST(Repeat, EvenCountAveragesTheTwoMiddleTimesAndReportsTheLowerRun) {
  // Sorted: 1 (run 1), 2 (run 3), 3 (run 2), 4 (run 0): median (2 + 3) / 2 = 2.5; spread
  // (4 - 1) / 2.5 = 1.2; the median run is the lower middle one, run 3.
  const RepeatStats s = RepeatStatsOf({4, 1, 3, 2});
  EXPECT_EQ(s.n, 4);
  EXPECT_DOUBLE_EQ(s.median_s, 2.5);
  EXPECT_DOUBLE_EQ(s.min_s, 1);
  EXPECT_DOUBLE_EQ(s.max_s, 4);
  EXPECT_DOUBLE_EQ(s.spread, 1.2);
  EXPECT_EQ(s.median_run, 3u);
}

TEST(Repeat, TiesPickTheEarlierRunAndOneRunHasNoSpread) {
  // Sorted: 1 (run 1), 2 (run 0), 2 (run 2): median 2, run 0; spread (2 - 1) / 2.
  RepeatStats s = RepeatStatsOf({2, 1, 2});
  EXPECT_DOUBLE_EQ(s.median_s, 2);
  EXPECT_EQ(s.median_run, 0u);
  EXPECT_DOUBLE_EQ(s.spread, 0.5);
  s = RepeatStatsOf({0.5});
  EXPECT_EQ(s.n, 1);
  EXPECT_DOUBLE_EQ(s.median_s, 0.5);
  EXPECT_DOUBLE_EQ(s.min_s, 0.5);
  EXPECT_DOUBLE_EQ(s.max_s, 0.5);
  EXPECT_DOUBLE_EQ(s.spread, 0);
  EXPECT_EQ(s.median_run, 0u);
  s = RepeatStatsOf({0, 0, 1});  // a zero median: no spread rather than a division by zero
  EXPECT_DOUBLE_EQ(s.median_s, 0);
  EXPECT_DOUBLE_EQ(s.spread, 0);
  s = RepeatStatsOf({});
  EXPECT_EQ(s.n, 0);
  EXPECT_DOUBLE_EQ(s.median_s, 0);
}

TEST(Repeat, ErrorIsSignedAndRelativeToThePrediction) {
  EXPECT_DOUBLE_EQ(ErrorPercent(1.5, 1.0), 50);    // (1.5 - 1) / 1 = +50%
  EXPECT_DOUBLE_EQ(ErrorPercent(0.75, 1.0), -25);  // (0.75 - 1) / 1 = -25%
  EXPECT_DOUBLE_EQ(ErrorPercent(1.0, 0.0), 0);     // no prediction to compare with
}

TEST(Repeat, CountsFromOneToAThousand) {
  EXPECT_TRUE(CheckRepeat(1).ok());
  EXPECT_TRUE(CheckRepeat(1000).ok());
  for (int64_t n : {int64_t{0}, int64_t{-1}, int64_t{1001}}) {
    const Status st = CheckRepeat(n);
    EXPECT_EQ(st.code(), ErrorCode::kInvalidInput) << n;
    EXPECT_NE(st.message().find(std::to_string(n)), std::string::npos) << st.message();
  }
  EXPECT_EQ(WarmUpRuns(1), 0);
  EXPECT_EQ(WarmUpRuns(2), 1);
  EXPECT_EQ(WarmUpRuns(1000), 1);
}

TEST(Repeat, SummaryOfRunsDescribesTheMedianRun) {
  // One rank with one compute op taking 3, 1 and 2 s in three runs: the median, 2 s, is run 2,
  // whose compute time (2 s) and wall time (2.5 s) are the ones reported.
  Schedule s;
  s.num_ranks = 1;
  s.ranks.resize(1);
  Op op;
  op.stream = StreamId::kCompute;
  op.kind = OpKind::kCompute;
  s.ranks[0].Add(op);
  const std::vector<std::vector<std::vector<OpTiming>>> timings = {
      {{{0, 3}}}, {{{0, 1}}}, {{{0, 2}}}};
  const RepeatedRuns runs = SummarizeRuns(s, 1, timings, {3.5, 1.5, 2.5});
  EXPECT_EQ(runs.warm_up, 1);
  EXPECT_EQ(runs.TimesS(), (std::vector<double>{3, 1, 2}));
  EXPECT_EQ(runs.stats.n, 3);
  EXPECT_DOUBLE_EQ(runs.stats.median_s, 2);
  EXPECT_EQ(runs.stats.median_run, 2u);
  EXPECT_DOUBLE_EQ(runs.MedianRun().run_s, 2);
  EXPECT_DOUBLE_EQ(runs.MedianRun().compute.mean, 2);
  EXPECT_DOUBLE_EQ(runs.MedianWallS(), 2.5);
}

}  // namespace
}  // namespace meshplan::exec
