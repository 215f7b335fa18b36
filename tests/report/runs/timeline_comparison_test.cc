// Predicted vs measured per rank and per op class (report/runs/timeline_comparison.h): error cells,
// which ranks the table shows, the tables' rows and width, and the JSON.
#include "report/runs/timeline_comparison.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

namespace meshplan::report {
namespace {

// The cells of a Columns line: text separated by runs of two or more spaces.
std::vector<std::string> Cells(const std::string& line) {
  std::vector<std::string> cells;
  std::string cell;
  size_t spaces = 0;
  for (char ch : line) {
    if (ch == ' ') {
      ++spaces;
      continue;
    }
    if (spaces >= 2 && !cell.empty()) {
      cells.push_back(cell);
      cell.clear();
    } else if (spaces == 1 && !cell.empty()) {
      cell += ' ';
    }
    spaces = 0;
    cell += ch;
  }
  if (!cell.empty()) cells.push_back(cell);
  return cells;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The line whose first cell is `first`.
std::vector<std::string> Row(const std::string& text, const std::string& first) {
  for (const std::string& line : Lines(text)) {
    const std::vector<std::string> cells = Cells(line);
    if (!cells.empty() && cells[0] == first) return cells;
  }
  return {};
}

exec::RunTimeline Timeline(double run_s, std::vector<exec::RankTimes> ranks) {
  return exec::TimelineOfRanks(run_s, std::move(ranks), std::nullopt);
}

TEST(TimelineComparison, ErrorIsSignedPercentAndAbsentForAZeroPrediction) {
  EXPECT_DOUBLE_EQ(*ErrorPct(3, 2), 50);   // (3 - 2) / 2
  EXPECT_DOUBLE_EQ(*ErrorPct(1, 4), -75);  // (1 - 4) / 4
  EXPECT_FALSE(ErrorPct(1, 0).has_value());
  EXPECT_FALSE(ErrorPct(0, 0).has_value());
}

TEST(TimelineComparison, ErrorCellsStayWithinSevenCharacters) {
  EXPECT_EQ(ErrorCell(50.0), "+50.0%");
  EXPECT_EQ(ErrorCell(0.0), "+0.0%");
  EXPECT_EQ(ErrorCell(-100.0), "-100.0%");
  EXPECT_EQ(ErrorCell(999.94), "+999.9%");
  EXPECT_EQ(ErrorCell(999.96), "+1000%");  // would print as +1000.0%: whole percents from here
  EXPECT_EQ(ErrorCell(14766.7), "+14767%");
  EXPECT_EQ(ErrorCell(99999.4), "+99999%");
  EXPECT_EQ(ErrorCell(99999.6), "+1.0e5%");   // 99999.6 = 1.0e5 to two significant digits
  EXPECT_EQ(ErrorCell(250000.0), "+2.5e5%");  // 2.5 x 10^5
  EXPECT_EQ(ErrorCell(996000.0), "+1.0e6%");  // 9.96 x 10^5 rounds to 10.0 x 10^5
  EXPECT_EQ(ErrorCell(std::nullopt), "n/a");
}

TEST(TimelineComparison, RankTableHasEachRanksTriplesAndErrors) {
  // Rank 0: predicted compute 1 ms, exposed 0.5 ms, idle 0.5 ms; measured 2 ms, 1 ms, 0.
  //   errors: (2 - 1) / 1 = +100%, (1 - 0.5) / 0.5 = +100%, (0 - 0.5) / 0.5 = -100%.
  // Rank 1: predicted 2 ms, 0, 0; measured 3 ms, 0, 0: +50%, n/a (0 predicted), n/a.
  const exec::RunTimeline p = Timeline(2e-3, {{1e-3, 0.5e-3, 0.5e-3}, {2e-3, 0, 0}});
  const exec::RunTimeline m = Timeline(3e-3, {{2e-3, 1e-3, 0}, {3e-3, 0, 0}});
  const std::string table = RenderRankComparison(p, m);
  EXPECT_EQ(Row(table, "rank"),
            (std::vector<std::string>{"rank", "predicted", "measured", "error", "predicted",
                                      "measured", "error", "predicted", "measured", "error"}));
  EXPECT_EQ(Row(table, "0"),
            (std::vector<std::string>{"0", "1.00 ms", "2.00 ms", "+100.0%", "500.0 us", "1.00 ms",
                                      "+100.0%", "500.0 us", "0.0 us", "-100.0%"}));
  EXPECT_EQ(Row(table, "1"),
            (std::vector<std::string>{"1", "2.00 ms", "3.00 ms", "+50.0%", "0.0 us", "0.0 us",
                                      "n/a", "0.0 us", "0.0 us", "n/a"}));
  // The group labels sit over each group's "predicted" column.
  const std::vector<std::string> lines = Lines(table);
  ASSERT_GE(lines.size(), 3u);
  const std::string& groups = lines[1];
  const std::string& header = lines[2];
  EXPECT_EQ(groups.find("compute"), header.find("predicted"));
  EXPECT_EQ(groups.find("exposed comm"), header.find("predicted", header.find("error")));
  EXPECT_EQ(groups.find("idle"), header.rfind("predicted"));
  EXPECT_EQ(table.find("of 2 ranks"), std::string::npos);  // every rank shown, no note
}

// `n` ranks, predicted busy 1 ms each; measured busy 1 ms except the given ranks' values.
void ManyRanks(size_t n, const std::vector<std::pair<size_t, double>>& measured_busy_s,
               exec::RunTimeline* p, exec::RunTimeline* m) {
  std::vector<exec::RankTimes> predicted(n, {0.8e-3, 0.2e-3, 0}), measured(n, {0.8e-3, 0.2e-3, 0});
  for (const auto& [rank, busy] : measured_busy_s) measured[rank] = {busy - 0.2e-3, 0.2e-3, 0};
  *p = Timeline(1e-3, predicted);
  *m = Timeline(1e-3, measured);
}

TEST(TimelineComparison, SixteenRanksAreAllShown) {
  exec::RunTimeline p, m;
  ManyRanks(16, {}, &p, &m);
  EXPECT_EQ(RanksShown(p, m).size(), 16u);
}

TEST(TimelineComparison, ManyRanksShowTheThreeWithTheLargestBusyError) {
  // 17 ranks, busy 1 ms predicted. Measured busy: rank 3 0.3 ms ((0.3 - 1) / 1 = -70%), rank 5
  // 1.5 ms (+50%), rank 9 3 ms (+200%), rank 12 0.7 ms (-30%), the others 1 ms (0%). Largest
  // |error| first: 9, 3, 5.
  exec::RunTimeline p, m;
  ManyRanks(17, {{3, 0.3e-3}, {5, 1.5e-3}, {9, 3e-3}, {12, 0.7e-3}}, &p, &m);
  EXPECT_EQ(RanksShown(p, m), (std::vector<size_t>{9, 3, 5}));
  const std::string table = RenderRankComparison(p, m);
  EXPECT_FALSE(Row(table, "9").empty()) << table;
  EXPECT_TRUE(Row(table, "12").empty()) << table;
  EXPECT_TRUE(Row(table, "0").empty()) << table;
  EXPECT_NE(table.find("(3 of 17 ranks: those with the largest |error| in busy time"),
            std::string::npos)
      << table;
}

TEST(TimelineComparison, RankTableFitsInOneHundredColumns) {
  // The widest cells: times of 9 characters ("999.99 ms", "123.456 s"), errors of 7 ("+12246%",
  // "+1.2e7%", "-100.0%"), rank numbers of 4 digits: 2 (indent) + 4 + 3 x (9 + 9 + 7) + 9 x 2 = 99.
  // 1200 ranks: predicted 999.99 ms each; measured compute and exposed 123.456 s, idle 0:
  // (123.456 - 0.99999) / 0.99999 = +12246%, idle -100.0%. Rank 1100 is predicted 1 ms of
  // compute: (123.456 - 0.001) / 0.001 = +1.2e7%; it has the largest busy error, so it is shown.
  std::vector<exec::RankTimes> predicted(1200, {0.99999, 0.99999, 0.99999});
  std::vector<exec::RankTimes> measured(1200, {123.456, 123.456, 0});
  predicted[1100].compute_s = 1e-3;
  const std::string table = RenderRankComparison(Timeline(1, predicted), Timeline(200, measured));
  const std::vector<std::string> row = Row(table, "1100");
  ASSERT_EQ(row.size(), 10u) << table;
  EXPECT_EQ(row[1], "1.00 ms");
  EXPECT_EQ(row[2], "123.456 s");
  EXPECT_EQ(row[3], "+1.2e7%");
  EXPECT_EQ(row[6], "+12246%");
  EXPECT_EQ(row[7], "999.99 ms");
  EXPECT_EQ(row[9], "-100.0%");
  for (const std::string& line : Lines(table)) EXPECT_LE(line.size(), 100u) << line;
}

TEST(TimelineComparison, OpClassTableHasTheClassesWithOps) {
  exec::OpClassTable predicted{}, measured{};
  auto at = [](exec::OpClassTable& t, exec::OpClass c) -> exec::OpClassTimes& {
    return t[static_cast<size_t>(c)];
  };
  // compute fwd: 8 ops, 1 ms predicted, 3 ms measured: (3 - 1) / 1 = +200%.
  at(predicted, exec::OpClass::kComputeForward) = {1e-3, 8};
  at(measured, exec::OpClass::kComputeForward) = {3e-3, 8};
  // send: 4 ops, 2 ms predicted, 1 ms measured: -50%.
  at(predicted, exec::OpClass::kSend) = {2e-3, 4};
  at(measured, exec::OpClass::kSend) = {1e-3, 4};
  // recv: predicted 4 ops, measured 3 (a missing time): shown with both counts.
  at(predicted, exec::OpClass::kRecv) = {2e-3, 4};
  at(measured, exec::OpClass::kRecv) = {2e-3, 3};
  exec::RunTimeline p = exec::TimelineOfRanks(1, {}, predicted);
  exec::RunTimeline m = exec::TimelineOfRanks(1, {}, measured);
  const std::string table = RenderOpClassComparison(p, m);
  EXPECT_EQ(Row(table, "class"), (std::vector<std::string>{"class", "ops", "predicted", "measured",
                                                           "error vs predicted"}));
  EXPECT_EQ(Row(table, "compute fwd"),
            (std::vector<std::string>{"compute fwd", "8", "1.00 ms", "3.00 ms", "+200.0%"}));
  EXPECT_EQ(Row(table, "send"),
            (std::vector<std::string>{"send", "4", "2.00 ms", "1.00 ms", "-50.0%"}));
  EXPECT_EQ(Row(table, "recv"),
            (std::vector<std::string>{"recv", "3 (predicted 4)", "2.00 ms", "2.00 ms", "+0.0%"}));
  EXPECT_TRUE(Row(table, "compute bwd").empty()) << table;  // no ops in either
  EXPECT_TRUE(Row(table, "all-to-all").empty()) << table;

  p.op_classes.reset();
  EXPECT_NE(
      RenderOpClassComparison(p, m).find("unavailable: the prediction recorded no per-op times"),
      std::string::npos);
}

TEST(TimelineComparison, JsonHasEveryRankAndClassAndTheErrors) {
  exec::OpClassTable predicted{}, measured{};
  predicted[static_cast<size_t>(exec::OpClass::kComputeBackward)] = {2, 2};
  measured[static_cast<size_t>(exec::OpClass::kComputeBackward)] = {3, 2};
  // Predicted: compute 1, 1 (mean 1), exposed 1, 0 (mean 0.5), idle 0, 1 (mean 0.5); time 2.
  // Measured: compute 2, 1 (mean 1.5), exposed 1, 0 (mean 0.5), idle 0, 1 (mean 0.5); median 3.
  const exec::RunTimeline p = exec::TimelineOfRanks(2, {{1, 1, 0}, {1, 0, 1}}, predicted);
  const exec::RunTimeline m = exec::TimelineOfRanks(3, {{2, 1, 0}, {1, 0, 1}}, measured);
  JsonWriter j;
  j.BeginObject();
  TimelineDetailJson(j, m);
  j.Key("error_pct");
  ErrorsJson(j, p, m, 3);
  j.EndObject();
  const std::string json = j.Take();
  // Rank 0 measured: busy = 2 + 1 = 3.
  EXPECT_NE(
      json.find(
          "\"ranks\":[{\"rank\":0,\"compute_s\":2,\"exposed_comm_s\":1,\"idle_s\":0,\"busy_s\":3},"
          "{\"rank\":1,"),
      std::string::npos)
      << json;
  // Every class, in OpClass order, measured compute bwd 3 s over 2 ops.
  EXPECT_NE(json.find("\"op_classes\":[{\"class\":\"compute fwd\",\"ops\":0,\"time_s\":0},"
                      "{\"class\":\"compute bwd\",\"ops\":2,\"time_s\":3},"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("{\"class\":\"all-to-all\",\"ops\":0,\"time_s\":0}]"), std::string::npos)
      << json;
  // Errors: time (3 - 2) / 2 = +50%; compute mean (1.5 - 1) / 1 = +50%; exposed and idle 0%.
  EXPECT_NE(json.find("\"error_pct\":{\"time\":50,\"compute\":50,\"exposed_comm\":0,\"idle\":0,"),
            std::string::npos)
      << json;
  // Rank 0: compute (2 - 1) / 1 = +100%, exposed 0%, idle null (0 predicted), busy (3 - 2) / 2 =
  // +50%.
  EXPECT_NE(json.find("{\"rank\":0,\"compute\":100,\"exposed_comm\":0,\"idle\":null,\"busy\":50}"),
            std::string::npos)
      << json;
  // Rank 1: compute 0%, exposed null, idle 0%, busy (1 - 1) / 1 = 0%.
  EXPECT_NE(json.find("{\"rank\":1,\"compute\":0,\"exposed_comm\":null,\"idle\":0,\"busy\":0}"),
            std::string::npos)
      << json;
  // Classes: compute fwd null (0 predicted), compute bwd (3 - 2) / 2 = +50%.
  EXPECT_NE(json.find("\"op_classes\":[{\"class\":\"compute "
                      "fwd\",\"time\":null},{\"class\":\"compute bwd\",\"time\":50},"),
            std::string::npos)
      << json;
}

}  // namespace
}  // namespace meshplan::report
