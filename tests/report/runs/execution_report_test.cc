// The report of `meshplan execute` (report/runs/execution_report.h) on a hand-made report:
// predicted vs measured with the signed error of each pair, then per rank and per op class; the
// same in JSON.
#include "report/runs/execution_report.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "tests/tools/json_reader.h"

namespace meshplan::report {
namespace {

ExecutionReport TwoRanks() {
  ExecutionReport r;
  r.plan_file = "p.toml";
  r.precision = "fp32";
  r.backend = "cpu";
  r.transport = "threads";
  r.run = "backend cpu, transport threads, 2 ranks";
  r.ranks = 2;
  exec::OpClassTable predicted{}, measured{};
  predicted[static_cast<size_t>(exec::OpClass::kComputeForward)] = {3e-3, 4};
  measured[static_cast<size_t>(exec::OpClass::kComputeForward)] = {6e-3, 4};
  // Predicted: ranks' compute 1 and 2 ms (mean 1.5), exposed 1 and 0 ms (mean 0.5), idle 0 and
  // 0 (mean 0); time 2 ms. Measured: compute 2 and 4 ms (mean 3), exposed 1 and 0 (mean 0.5),
  // idle 1 ms and 0 (mean 0.5); one run of 4 ms.
  r.predicted = exec::TimelineOfRanks(2e-3, {{1e-3, 1e-3, 0}, {2e-3, 0, 0}}, predicted);
  r.measured = exec::TimelineOfRanks(4e-3, {{2e-3, 1e-3, 1e-3}, {4e-3, 0, 0}}, measured);
  r.have_prediction = true;
  r.wall_s = 5e-3;
  return r;
}

bool HasText(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

TEST(ExecutionReport, TableGivesEveryPairsErrorAndThePerRankAndPerClassTables) {
  const std::string t = RenderExecutionTable(TwoRanks());
  EXPECT_TRUE(HasText(t, "predicted  measured  error vs predicted\n")) << t;
  // time (4 - 2) / 2 = +100%; compute mean (3 - 1.5) / 1.5 = +100%; exposed mean 0.5 vs 0.5: +0%;
  // idle mean 0.5 ms against 0 predicted: no relative error.
  EXPECT_TRUE(HasText(t, "  time                 2.00 ms    4.00 ms   +100.0%\n")) << t;
  EXPECT_TRUE(HasText(t, "  compute (mean)       1.50 ms    3.00 ms   +100.0%\n")) << t;
  EXPECT_TRUE(HasText(t, "  exposed comm (mean)  500.0 us   500.0 us  +0.0%\n")) << t;
  EXPECT_TRUE(HasText(t, "  idle (mean)          0.0 us     500.0 us  n/a\n")) << t;
  EXPECT_TRUE(HasText(t, "per rank, predicted vs measured (error vs predicted):\n")) << t;
  EXPECT_TRUE(HasText(t, "per op class, predicted vs measured (sum over ranks of op durations):\n"))
      << t;
  // compute fwd: 3 ms predicted, 6 ms measured over 4 ops: +100%.
  EXPECT_TRUE(HasText(t, "  compute fwd  4    3.00 ms    6.00 ms   +100.0%\n")) << t;
}

TEST(ExecutionReport, JsonHasRanksClassesAndErrors) {
  const std::string j = RenderExecutionJson(TwoRanks());
  EXPECT_TRUE(HasText(j, "\"measured\":{\"time_s\":0.004,")) << j;
  // Measured rank 1: busy = 4 + 0 ms.
  EXPECT_TRUE(HasText(
      j, "{\"rank\":1,\"compute_s\":0.004,\"exposed_comm_s\":0,\"idle_s\":0,\"busy_s\":0.004}"))
      << j;
  EXPECT_TRUE(HasText(j, "{\"class\":\"compute fwd\",\"ops\":4,\"time_s\":0.003}"))
      << j;  // predicted
  // time: the one run (4 ms) against 2 ms: +100%; idle null (0 predicted).
  EXPECT_TRUE(
      HasText(j, "\"error_pct\":{\"time\":100,\"compute\":100,\"exposed_comm\":0,\"idle\":null,"))
      << j;

  ExecutionReport none = TwoRanks();
  none.have_prediction = false;
  none.prediction_error = "no such GPU";
  EXPECT_TRUE(HasText(RenderExecutionJson(none), "\"error_pct\":null"))
      << RenderExecutionJson(none);
  const std::string t = RenderExecutionTable(none);
  EXPECT_TRUE(HasText(t, "unavailable: no such GPU")) << t;
  EXPECT_FALSE(HasText(t, "per op class")) << t;
}

TEST(ExecutionReport, ThroughputPerRankAndMemory) {
  ExecutionReport r = TwoRanks();
  // 8e9 FLOPs over 2 ranks in the one run's 4 ms: 8e9 / 2 / 4e-3 = 1e12 FLOP/s = 1 TFLOP/s per
  // rank.
  r.flops = 8e9;
  r.process_peak_rss_bytes = 3 * 1048576.0;
  r.rank_peak_bytes = {1048576, 3 * 1048576};
  r.modelled_rank_peak_bytes = 2 * 1048576.0;
  EXPECT_DOUBLE_EQ(TflopsPerRank(r), 1.0);
  const std::string t = RenderExecutionTable(r);
  EXPECT_TRUE(HasText(t, "throughput: 1.000 TFLOP/s per rank (8.00e+09 FLOPs by LongCA's count"))
      << t;
  // Ranks 1 and 3 MiB: max 3, mean 2.
  EXPECT_TRUE(HasText(
      t,
      "memory:    process peak RSS 3.00 MiB; engine peak per rank: max 3.00 MiB, mean 2.00 MiB; "
      "planner's model 2.00 MiB per rank\n"))
      << t;
  const std::string j = RenderExecutionJson(r);
  EXPECT_TRUE(HasText(j, "\"flops\":8e+09,\"tflops_per_rank\":1,")) << j;
  EXPECT_TRUE(HasText(
      j,
      "\"memory\":{\"process_peak_rss_bytes\":3145728,\"rank_peak_bytes\":[1048576,3145728],"
      "\"modelled_rank_peak_bytes\":2097152}"))
      << j;
  // With repeated runs the median time counts: runs of 2, 8 and 4 ms have median 4 ms.
  r.runs.stats = exec::RepeatStatsOf({2e-3, 8e-3, 4e-3});
  EXPECT_DOUBLE_EQ(TflopsPerRank(r), 1.0);
}

TEST(ExecutionReport, TimesThatCannotBeComparedAreShownSideBySideWithoutErrors) {
  // CPU ranks against a GPU cluster's prediction (issue 32): both times, no percentage errors,
  // one line saying why; JSON keeps its errors and says the times are not comparable.
  ExecutionReport r = TwoRanks();
  r.compare_times = false;
  const std::string t = RenderExecutionTable(r);
  EXPECT_FALSE(HasText(t, "error vs predicted")) << t;
  EXPECT_FALSE(HasText(t, "+100.0%")) << t;
  EXPECT_TRUE(HasText(t, "  time                 2.00 ms    4.00 ms\n")) << t;
  EXPECT_TRUE(HasText(t, "  compute (mean)       1.50 ms    3.00 ms\n")) << t;
  // The shares stay: predicted exposed 0.5 of 2 ms = 25.0%; measured 0.5 of 4 ms = 12.5%.
  EXPECT_TRUE(HasText(t, "  exposed comm / time  25.0%      12.5%\n")) << t;
  EXPECT_TRUE(HasText(t, "so no errors are shown (--errors shows them)")) << t;
  EXPECT_TRUE(HasText(t, "per rank, predicted and measured:\n")) << t;
  // Rank 0: compute 1 and 2 ms, exposed 1 and 1 ms, idle 0 and 1 ms, without error columns.
  EXPECT_TRUE(HasText(t, "  0     1.00 ms    2.00 ms   1.00 ms    1.00 ms   0.0 us     1.00 ms\n"))
      << t;
  EXPECT_TRUE(HasText(t, "  compute fwd  4    3.00 ms    6.00 ms\n")) << t;
  const std::string j = RenderExecutionJson(r);
  EXPECT_TRUE(HasText(j, "\"error_pct\":{\"time\":100,")) << j;
  EXPECT_TRUE(HasText(j, "\"times_comparable\":false")) << j;
  EXPECT_TRUE(HasText(RenderExecutionJson(TwoRanks()), "\"times_comparable\":true"));
}

// The value of `column` in a header-and-row CSV (no quoted commas in the columns asked for).
std::string CsvValue(const std::string& csv, const std::string& column) {
  const size_t header_end = csv.find('\n');
  const std::string header = "," + csv.substr(0, header_end) + ",";
  const size_t at = header.find("," + column + ",");
  if (at == std::string::npos) return "<no column " + column + ">";
  const long index =
      std::count(header.begin(), header.begin() + static_cast<long>(at) + 1, ',') - 1;
  std::string row = csv.substr(header_end + 1);
  row = row.substr(0, row.find('\n'));
  size_t start = 0;
  for (long i = 0; i < index; ++i) start = row.find(',', start) + 1;
  return row.substr(start, row.find(',', start) - start);
}

TEST(ExecutionReport, CsvIsOneRowUnderAHeader) {
  ExecutionReport r = TwoRanks();
  r.flops = 8e9;
  r.process_peak_rss_bytes = 3 * 1048576.0;
  const std::string csv = ExecutionCsv(r, /*with_header=*/true);
  ASSERT_EQ(std::count(csv.begin(), csv.end(), '\n'), 2) << csv;
  const std::string row = csv.substr(csv.find('\n') + 1);
  EXPECT_EQ(ExecutionCsv(r, /*with_header=*/false), row);
  EXPECT_EQ(CsvValue(csv, "plan"), "p.toml");
  EXPECT_EQ(CsvValue(csv, "backend"), "cpu");
  EXPECT_EQ(CsvValue(csv, "ranks"), "2");
  // The one run's time is its timeline's 4 ms; predicted 2 ms; error (4 - 2) / 2 = +100%.
  EXPECT_EQ(CsvValue(csv, "time_s"), "0.004");
  EXPECT_EQ(CsvValue(csv, "min_s"), "0.004");
  EXPECT_EQ(CsvValue(csv, "predicted_s"), "0.002");
  EXPECT_EQ(CsvValue(csv, "error_pct"), "100");
  EXPECT_EQ(CsvValue(csv, "times_comparable"), "true");
  // 8e9 FLOPs / 2 ranks / 4 ms = 1 TFLOP/s per rank; 3 MiB as an integer.
  EXPECT_EQ(CsvValue(csv, "tflops_per_rank"), "1");
  EXPECT_EQ(CsvValue(csv, "process_peak_rss_bytes"), "3145728");
  // Not checked: empty check fields; no prediction: empty predicted_s and error_pct.
  EXPECT_EQ(CsvValue(csv, "check"), "");
  r.have_prediction = false;
  const std::string none = ExecutionCsv(r, true);
  EXPECT_EQ(CsvValue(none, "predicted_s"), "");
  EXPECT_EQ(CsvValue(none, "error_pct"), "");
  // The header does not depend on the report: rows of different runs line up.
  EXPECT_EQ(none.substr(0, none.find('\n')), csv.substr(0, csv.find('\n')));
  // Median of runs of 2, 8 and 4 ms: 4 ms; min 2 ms, max 8 ms.
  r.runs.stats = exec::RepeatStatsOf({2e-3, 8e-3, 4e-3});
  const std::string repeated = ExecutionCsv(r, true);
  EXPECT_EQ(CsvValue(repeated, "runs"), "3");
  EXPECT_EQ(CsvValue(repeated, "min_s"), "0.002");
  EXPECT_EQ(CsvValue(repeated, "max_s"), "0.008");
}

// The machine's speed check: the reference block took 1.1 and 1.3 ms around the runs against
// 1.0 ms when calibrated, a ratio of (1.1 + 1.3) / 2 / 1.0 = 1.2. The prediction of 2 ms at that
// speed is 2.4 ms, and the measured 4 ms is (4 - 2.4) / 2.4 = +66.7% over it.
ExecutionReport WithSpeed() {
  ExecutionReport r = TwoRanks();
  r.speed.calibration_s = 1e-3;
  r.speed.calibration_spread = 0.05;
  r.speed.head_dim = 64;
  r.speed.before_s = 1.1e-3;
  r.speed.after_s = 1.3e-3;
  return r;
}

TEST(ExecutionReport, TheMachinesSpeedScalesThePredictionInItsOwnRow) {
  const std::string t = RenderExecutionTable(WithSpeed());
  EXPECT_TRUE(
      HasText(t,
              "speed:     the 512-token reference block (head dim 64) took 1.10 ms before the "
              "runs and 1.30 ms after, 1.00 ms when calibrated (where it moved 5.0%): "
              "1.200x the calibration's time\n"))
      << t;
  EXPECT_TRUE(HasText(t, "  time                         2.00 ms    4.00 ms   +100.0%\n")) << t;
  EXPECT_TRUE(HasText(t, "  time at this speed (x1.200)  2.40 ms    4.00 ms   +66.7%\n")) << t;
  // Without the check, neither line.
  const std::string plain = RenderExecutionTable(TwoRanks());
  EXPECT_FALSE(HasText(plain, "speed:")) << plain;
  EXPECT_FALSE(HasText(plain, "at this speed")) << plain;
  // Measured only on one side (the block failed after the runs): no line either.
  ExecutionReport half = WithSpeed();
  half.speed.after_s = 0;
  EXPECT_FALSE(HasText(RenderExecutionTable(half), "at this speed"));
}

TEST(ExecutionReport, TheMachinesSpeedInJsonAndCsv) {
  const std::string text = RenderExecutionJson(WithSpeed());
  testing::Json j;
  ASSERT_TRUE(testing::Json::Parse(text, &j)) << text;
  const testing::Json* s = j.Find("machine_speed");
  ASSERT_NE(s, nullptr) << text;
  ASSERT_EQ(s->kind, testing::Json::kObject) << text;
  auto number = [&](const char* key) {
    const testing::Json* v = s->Find(key);
    EXPECT_NE(v, nullptr) << key;
    return v == nullptr ? -1.0 : v->number;
  };
  EXPECT_EQ(number("reference_block_tokens"), 512);
  EXPECT_EQ(number("head_dim"), 64);
  EXPECT_DOUBLE_EQ(number("calibration_s"), 1e-3);
  EXPECT_DOUBLE_EQ(number("calibration_spread"), 0.05);
  EXPECT_DOUBLE_EQ(number("before_s"), 1.1e-3);
  EXPECT_DOUBLE_EQ(number("after_s"), 1.3e-3);
  EXPECT_DOUBLE_EQ(number("ratio"), 1.2);
  EXPECT_DOUBLE_EQ(number("predicted_at_speed_s"), 2.4e-3);
  EXPECT_NEAR(number("error_at_speed_pct"), 100.0 * (4 - 2.4) / 2.4, 1e-9);
  EXPECT_TRUE(HasText(RenderExecutionJson(TwoRanks()), "\"machine_speed\":null"));
  const std::string csv = ExecutionCsv(WithSpeed(), true);
  EXPECT_DOUBLE_EQ(std::stod(CsvValue(csv, "speed_ratio")), 1.2);
  EXPECT_NEAR(std::stod(CsvValue(csv, "error_at_speed_pct")), 100.0 * (4 - 2.4) / 2.4, 1e-9);
  const std::string none = ExecutionCsv(TwoRanks(), true);
  EXPECT_EQ(CsvValue(none, "speed_ratio"), "");
  EXPECT_EQ(CsvValue(none, "error_at_speed_pct"), "");
}

}  // namespace
}  // namespace meshplan::report
