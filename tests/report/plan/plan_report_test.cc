// The plan listing with hand-made estimates: equivalent plans shown as one row ("+N") and nested
// in JSON, --all-variants listing every plan, --top counting rows, CSV numbers that read back
// exactly, and the --explain breakdown inside a JSON document that parses.
#include "report/plan/plan_report.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "core/cluster/topology_toml.h"
#include "core/workload/workload.h"
#include "planner/schemes/registry.h"
#include "tests/tools/json_reader.h"

namespace meshplan::report {
namespace {

using testing::Json;

constexpr double kBytesPerMiB = 1024.0 * 1024.0;

planner::Estimate MakeEstimate(Scheme scheme, int64_t window, double time_s, double ib_bytes) {
  planner::Estimate e;
  e.params.scheme = scheme;
  e.params.window = window;
  e.valid = true;
  e.fits = true;
  e.time_s = time_s;
  e.compute_s = time_s * 0.75;
  e.exposed_comm_s = time_s - e.compute_s;
  e.level_bytes = {64 * kBytesPerMiB, ib_bytes};
  e.bytes_per_rank = 64 * kBytesPerMiB + ib_bytes;
  e.peak_memory_bytes = 325 * kBytesPerMiB;
  e.flops_max = e.flops_mean = 15393162788864.0;  // %g would print 1.53932e+13
  return e;
}

// Ranked by time. Against plan 1 (1.000 s, 256 MiB over ib): plan 2 is equal, plan 4 is 0.4%
// slower, plan 5 0.6% slower (not a tie), plan 3 sends 1 MiB more over ib (not a tie). Groups:
// {1, 2, 4}, {3}, {5}.
planner::SearchResult Ranked() {
  planner::SearchResult r;
  r.ranked = {MakeEstimate(Scheme("usp"), 1, 1.000, 256 * kBytesPerMiB),
              MakeEstimate(Scheme("loongtrain"), 2, 1.000, 256 * kBytesPerMiB),
              MakeEstimate(Scheme("mesh"), 1, 1.001, 257 * kBytesPerMiB),
              MakeEstimate(Scheme("loongtrain"), 4, 1.004, 256 * kBytesPerMiB),
              MakeEstimate(Scheme("ring"), 1, 1.006, 256 * kBytesPerMiB)};
  // A time with 17 significant digits, to check that CSV and JSON keep them.
  r.ranked[0].time_s = r.ranked[1].time_s = 0.99999999999999989;
  r.evaluated = 7;
  return r;
}

class PlanReportTest : public ::testing::Test {
 protected:
  // PlanContext keeps references: the workload and topology live as long as it (found by ASan).
  PlanReportTest() : topology_(DefaultTopology()), ctx_(workload_, topology_) {}
  // The table's data rows: the lines after the rule under the header, up to a blank line or the
  // "... N more" line.
  static std::vector<std::string> DataRows(const std::string& table) {
    std::vector<std::string> rows;
    std::istringstream in(table.substr(table.find("\n---") + 1));
    std::string line;
    std::getline(in, line);  // the rule
    while (std::getline(in, line) && !line.empty() && line.rfind("...", 0) != 0)
      rows.push_back(line);
    return rows;
  }
  Workload workload_;
  Topology topology_;
  planner::PlanContext ctx_;
};

TEST_F(PlanReportTest, TableShowsEachGroupOnceWithItsCount) {
  PlanListing listing;
  const std::vector<std::string> rows = DataRows(PlanTable(ctx_, Ranked(), listing));
  ASSERT_EQ(rows.size(), 3u);
  // Plan numbers stay those of the full ranking (--pick, --explain): 1, 3, 5.
  EXPECT_EQ(rows[0].rfind("1  usp", 0), 0u) << rows[0];
  EXPECT_EQ(rows[1].rfind("3  mesh", 0), 0u) << rows[1];
  EXPECT_EQ(rows[2].rfind("5  ring", 0), 0u) << rows[2];
  EXPECT_EQ(rows[0].substr(rows[0].size() - 2), "+2") << rows[0];
  EXPECT_EQ(rows[1].find('+'), std::string::npos) << rows[1];
}

TEST_F(PlanReportTest, TopCountsRowsAndAllVariantsListsEveryPlan) {
  PlanListing listing;
  listing.top = 2;
  std::string table = PlanTable(ctx_, Ranked(), listing);
  EXPECT_EQ(DataRows(table).size(), 2u) << table;
  EXPECT_NE(table.find("... 1 more row (--top 0 shows all)"), std::string::npos) << table;
  listing.all_variants = true;
  listing.top = 0;
  table = PlanTable(ctx_, Ranked(), listing);
  const std::vector<std::string> rows = DataRows(table);
  ASSERT_EQ(rows.size(), 5u) << table;
  // Plans 2 and 4 are marked as equivalent to plan 1; the others are not marked.
  EXPECT_EQ(rows[1].substr(rows[1].size() - 3), "=#1") << rows[1];
  EXPECT_EQ(rows[3].substr(rows[3].size() - 3), "=#1") << rows[3];
  for (size_t r : {0, 2, 4}) EXPECT_EQ(rows[r].find("=#"), std::string::npos) << rows[r];
}

TEST_F(PlanReportTest, WideTableKeepsEveryColumn) {
  PlanListing listing;
  listing.wide = true;
  const std::string table = PlanTable(ctx_, Ranked(), listing);
  for (const char* column : {"scheme", "parameters", "compute", "exposed comm", "bytes/GPU nvlink",
                             "bytes/GPU ib", "imbalance", "peak mem", "fits", "tie"}) {
    EXPECT_NE(table.find(column), std::string::npos) << column << "\n" << table;
  }
}

TEST_F(PlanReportTest, JsonNestsEquivalentsAndParses) {
  const std::string text = PlanJson(ctx_, Ranked(), PlanListing{});
  Json j;
  ASSERT_TRUE(Json::Parse(text, &j)) << text;
  EXPECT_EQ(j.Find("valid")->number, 5);
  EXPECT_EQ(j.Find("groups")->number, 3);
  EXPECT_DOUBLE_EQ(j.Find("equivalence")->Find("time_tolerance")->number, 0.005);
  const std::vector<Json>& plans = j.Find("plans")->items;
  ASSERT_EQ(plans.size(), 3u);
  const std::vector<double> expected_ranks = {1, 3, 5};
  for (size_t g = 0; g < plans.size(); ++g) {
    EXPECT_EQ(plans[g].Find("rank")->number, expected_ranks[g]);
    EXPECT_EQ(plans[g].Find("group")->number, static_cast<double>(g + 1));
  }
  const std::vector<Json>& equivalents = plans[0].Find("equivalents")->items;
  ASSERT_EQ(equivalents.size(), 2u);
  EXPECT_EQ(equivalents[0].Find("rank")->number, 2);
  EXPECT_EQ(equivalents[1].Find("rank")->number, 4);
  EXPECT_EQ(equivalents[1].Find("window")->number, 4);
  EXPECT_EQ(equivalents[1].Find("group")->number, 1);
  EXPECT_TRUE(plans[1].Find("equivalents")->items.empty());
  // Full precision: 0.99999999999999989 is not 1.
  EXPECT_EQ(plans[0].Find("time_s")->number, 0.99999999999999989);
  EXPECT_EQ(j.Find("explain"), nullptr);
}

TEST_F(PlanReportTest, JsonWithAllVariantsIsFlatWithGroupNumbers) {
  PlanListing listing;
  listing.all_variants = true;
  Json j;
  ASSERT_TRUE(Json::Parse(PlanJson(ctx_, Ranked(), listing), &j));
  const std::vector<Json>& plans = j.Find("plans")->items;
  ASSERT_EQ(plans.size(), 5u);
  const std::vector<double> groups = {1, 1, 2, 1, 3};
  for (size_t i = 0; i < plans.size(); ++i) {
    EXPECT_EQ(plans[i].Find("rank")->number, static_cast<double>(i + 1));
    EXPECT_EQ(plans[i].Find("group")->number, groups[i]) << i;
    EXPECT_EQ(plans[i].Find("equivalents"), nullptr);
  }
}

TEST_F(PlanReportTest, JsonHoldsTheExplainBreakdown) {
  planner::SearchResult result = Ranked();
  // Plan 3 with two stages: 3 x max(0.2, 0.1) + 1 x (0.3 + 0.101) = 1.001 s.
  result.ranked[2].stages = {{"ring step", 0.2, 0.1, true, 3},
                             {"all-to-all", 0.3, 0.101, false, 1}};
  const ExplainedPlan explained{3, nullptr};
  const std::string text = PlanJson(ctx_, result, PlanListing{}, &explained);
  Json j;
  ASSERT_TRUE(Json::Parse(text, &j)) << text;
  const Json* explain = j.Find("explain");
  ASSERT_NE(explain, nullptr) << text;
  EXPECT_EQ(explain->Find("rank")->number, 3);
  EXPECT_EQ(explain->Find("scheme")->string, "mesh");
  EXPECT_EQ(explain->Find("communication")->Find("bytes_per_gpu_by_level")->Find("ib")->number,
            257 * kBytesPerMiB);
  EXPECT_EQ(explain->Find("compute")->Find("flops_max")->number, 15393162788864.0);
  EXPECT_EQ(explain->Find("memory")->Find("peak_bytes_per_gpu")->number, 325 * kBytesPerMiB);
  const std::vector<Json>& stages = explain->Find("time")->Find("stages")->items;
  ASSERT_EQ(stages.size(), 2u);
  EXPECT_EQ(stages[0].Find("label")->string, "ring step");
  EXPECT_EQ(stages[0].Find("count")->number, 3);
  EXPECT_NEAR(stages[0].Find("stage_s")->number, 0.6, 1e-12);    // 3 x max(0.2, 0.1)
  EXPECT_NEAR(stages[1].Find("stage_s")->number, 0.401, 1e-12);  // 0.3 + 0.101, not overlapped
  EXPECT_FALSE(stages[1].Find("overlapped")->boolean);
  EXPECT_FALSE(explain->Find("schedule")->Find("expanded")->boolean);
  EXPECT_NE(explain->Find("schedule")->Find("reason"), nullptr);
}

// Splits one CSV line without quoted commas (parameters here hold none).
std::vector<std::string> Fields(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  std::string field;
  while (std::getline(in, field, ',')) out.push_back(field);
  return out;
}

TEST_F(PlanReportTest, CsvHasOneRowPerGroupAndNumbersThatReadBack) {
  const std::string csv = PlanCsv(ctx_, Ranked(), PlanListing{});
  std::istringstream in(csv);
  std::string line;
  std::getline(in, line);
  const std::vector<std::string> header = Fields(line);
  const auto column = [&header](const std::string& name) {
    return static_cast<size_t>(std::find(header.begin(), header.end(), name) - header.begin());
  };
  ASSERT_LT(column("equivalents"), header.size()) << line;
  std::vector<std::vector<std::string>> rows;
  while (std::getline(in, line)) rows.push_back(Fields(line));
  ASSERT_EQ(rows.size(), 3u) << csv;
  EXPECT_EQ(rows[0][column("rank")], "1");
  EXPECT_EQ(rows[0][column("group")], "1");
  EXPECT_EQ(rows[0][column("equivalents")], "2");
  EXPECT_EQ(rows[2][column("rank")], "5");
  EXPECT_EQ(rows[2][column("equivalents")], "0");
  // Each number reads back as the double it came from.
  EXPECT_EQ(std::strtod(rows[0][column("time_s")].c_str(), nullptr), 0.99999999999999989);
  EXPECT_EQ(std::strtod(rows[0][column("flops_max")].c_str(), nullptr), 15393162788864.0);
  EXPECT_EQ(std::strtod(rows[1][column("bytes_ib")].c_str(), nullptr), 257 * kBytesPerMiB);
}

}  // namespace
}  // namespace meshplan::report
