// `meshplan plan` output end to end: machine formats that always parse (--explain inside JSON,
// refused with CSV), equivalent plans grouped, numeric flags validated, the compact table's width.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tests/tools/cli_fixture.h"
#include "tests/tools/json_reader.h"

namespace meshplan {
namespace {

namespace fs = std::filesystem;
using testing::Json;

using Output = testing::CliResult;

class PlanOutput : public testing::CliFixture {
 protected:
  // Exit 2, nothing on stdout, one stderr line "meshplan: error: ..." holding every needle.
  void ExpectInvalid(const std::string& args, std::initializer_list<std::string> needles) {
    const Output r = Run(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    EXPECT_TRUE(r.out.empty()) << args << "\n" << r.out;
    EXPECT_EQ(r.err.rfind("meshplan: error: ", 0), 0u) << r.err;
    for (const std::string& n : needles)
      EXPECT_NE(r.err.find(n), std::string::npos) << args << "\n" << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "expected one line:\n" << r.err;
  }
  static std::string FourNode() {
    return std::string(MESHPLAN_SOURCE_DIR) + "/topologies/dgx-h100-4node.toml";
  }
};

TEST_F(PlanOutput, JsonWithExplainIsOneDocumentHoldingTheBreakdown) {
  const Output r = Run("plan -t " + FourNode() + " --seq 256K --top 3 --format json --explain 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Json j;
  ASSERT_TRUE(Json::Parse(r.out, &j)) << r.out;
  ASSERT_NE(j.Find("plans"), nullptr);
  const Json* explain = j.Find("explain");
  ASSERT_NE(explain, nullptr) << r.out;
  EXPECT_EQ(explain->Find("rank")->number, 2);
  for (const char* key :
       {"scheme", "parameters", "communication", "compute", "memory", "time", "schedule"}) {
    EXPECT_NE(explain->Find(key), nullptr) << key;
  }
  // The time model: the total is the sum of its stages (planner/estimate.h, FinishTime), and each
  // stage is count x (overlapped ? max : sum) of its compute and communication.
  const Json* time = explain->Find("time");
  double sum_s = 0;
  ASSERT_FALSE(time->Find("stages")->items.empty());
  for (const Json& s : time->Find("stages")->items) {
    const double compute = s.Find("compute_s")->number, comm = s.Find("comm_s")->number;
    const double one = s.Find("overlapped")->boolean ? std::max(compute, comm) : compute + comm;
    EXPECT_NEAR(s.Find("stage_s")->number, s.Find("count")->number * one, 1e-12);
    sum_s += s.Find("stage_s")->number;
  }
  EXPECT_NEAR(time->Find("total_s")->number, sum_s, 1e-9);
  // Bytes: the forward and backward parts add up to the total.
  const Json* comm = explain->Find("communication");
  EXPECT_NEAR(
      comm->Find("forward_bytes_per_gpu")->number + comm->Find("backward_bytes_per_gpu")->number,
      comm->Find("bytes_per_gpu")->number, 1.0);
  // 32 ranks: the schedule is expanded and rank 0's first ops are listed (at most 24).
  const Json* schedule = explain->Find("schedule");
  EXPECT_TRUE(schedule->Find("expanded")->boolean);
  EXPECT_EQ(schedule->Find("ranks")->number, 32);
  const size_t ops = schedule->Find("rank0_first_ops")->items.size();
  EXPECT_GT(ops, 0u);
  EXPECT_LE(ops, 24u);
  // The plan explained is plan #2 of the ranking, whichever group holds it.
  const Output all =
      Run("plan -t " + FourNode() + " --seq 256K --top 2 --all-variants --format json");
  Json k;
  ASSERT_TRUE(Json::Parse(all.out, &k)) << all.out;
  EXPECT_EQ(k.Find("plans")->items[1].Find("parameters")->string,
            explain->Find("parameters")->string);
}

TEST_F(PlanOutput, ExplainWithCsvIsRefusedAndBadNumbersToo) {
  ExpectInvalid("plan --seq 256K --format csv --explain", {"--explain", "csv", "json"});
  ExpectInvalid("plan --seq 256K --format csv --explain 2", {"--explain", "csv"});
  ExpectInvalid("plan --seq 256K --top -1", {"--top", "must not be negative"});
  ExpectInvalid("plan --seq 256K --top=-5", {"--top", "must not be negative"});
  ExpectInvalid("plan --seq 256K --explain 0", {"--explain", "'0' is not a plan number"});
  ExpectInvalid("plan --seq 256K --explain=-1", {"--explain", "'-1' is not a plan number"});
  ExpectInvalid("plan --seq 256K --explain 2x", {"--explain", "'2x'"});
  // --top 0 still lists everything.
  const Output r = Run("plan --seq 256K --top 0 --format csv --all-variants");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Json j;
  const Output json = Run("plan --seq 256K --format json --top 1");
  ASSERT_TRUE(Json::Parse(json.out, &j)) << json.out;
  // header + one row per valid plan
  EXPECT_EQ(static_cast<double>(std::count(r.out.begin(), r.out.end(), '\n')),
            1 + j.Find("valid")->number);
}

// Equal-cost variants fold into one row. On the default cluster and workload USP U=8 R=32,
// LoongTrain hp=8 cp=32 with one window spanning the ring (w = 32: the same single ring) and
// Mesh-Ulysses U=8 a=1 b=32 (one tile row: the same ring) are the same plan three ways: the
// same time and the same bytes. (The first example, LoongTrain with windows 2, 4, 8 and
// 16, cost the same only while the estimate exposed one dK,dV hop whatever the windows; since
// 2026-12-01 it exposes one a round, as InternEvo's backward and the replay do, so smaller
// windows cost more, checked below.)
TEST_F(PlanOutput, EqualCostVariantsAreOneRow) {
  const std::vector<std::string> same = {
      "usp U=8 R=32 zigzag cache place=ulysses>ring",
      "loongtrain hp=8 cp=32 w=32 zigzag cache place=head>inner>outer",
      "mesh-ulysses U=8 a=1 b=32 zigzag cache place=ulysses>kv>q"};
  Output r = Run("plan --all-variants --top 0 --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Json all;
  ASSERT_TRUE(Json::Parse(r.out, &all));
  std::map<std::string, double> group_of, time_of;  // described plan -> group, time
  for (const Json& p : all.Find("plans")->items) {
    const std::string described = p.Find("scheme")->string + " " + p.Find("parameters")->string;
    group_of[described] = p.Find("group")->number;
    time_of[described] = p.Find("time_s")->number;
  }
  for (const std::string& plan : same) {
    ASSERT_EQ(group_of.count(plan), 1u) << plan;
    EXPECT_EQ(group_of[plan], group_of[same[0]]) << plan;
  }
  // 16 windows of 2 expose 16 inner dK,dV hops (and the outer one) where one window spanning the
  // ring exposes one: w = 2 costs more, in a group of its own.
  const std::string w2 = "loongtrain hp=8 cp=32 w=2 zigzag cache place=head>inner>outer";
  ASSERT_EQ(time_of.count(w2), 1u);
  EXPECT_GT(time_of[w2], time_of[same[1]]);
  EXPECT_NE(group_of[w2], group_of[same[1]]);

  // In the table at most one of them has a row.
  r = Run("plan");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int rows = 0;
  for (const std::string& plan : same) rows += r.out.find(plan) != std::string::npos;
  EXPECT_LE(rows, 1) << r.out;

  // Every equivalent nested in JSON is within 0.5% of its representative's time and sends the same
  // bytes, in total and per level.
  r = Run("plan --format json --top 0");
  Json grouped;
  ASSERT_TRUE(Json::Parse(r.out, &grouped));
  size_t listed = 0;
  for (const Json& p : grouped.Find("plans")->items) {
    ++listed;
    for (const Json& e : p.Find("equivalents")->items) {
      ++listed;
      const double t = p.Find("time_s")->number;
      EXPECT_LE(std::fabs(e.Find("time_s")->number - t), 0.005 * t);
      EXPECT_EQ(e.Find("bytes_per_gpu")->number, p.Find("bytes_per_gpu")->number);
      EXPECT_EQ(e.Find("bytes_per_gpu_by_level")->Find("ib")->number,
                p.Find("bytes_per_gpu_by_level")->Find("ib")->number);
      EXPECT_EQ(e.Find("group")->number, p.Find("group")->number);
    }
  }
  // Grouping loses no plan.
  EXPECT_EQ(static_cast<double>(listed), grouped.Find("valid")->number);
  EXPECT_LT(grouped.Find("plans")->items.size(), listed);
}

TEST_F(PlanOutput, TopCountsGroups) {
  const Output r = Run("plan --seq 256K --top 3");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string after_rule = r.out.substr(r.out.find("\n---") + 1);
  std::istringstream in(after_rule);
  std::string line;
  std::getline(in, line);
  int rows = 0;
  while (std::getline(in, line) && !line.empty() && line.rfind("...", 0) != 0) ++rows;
  EXPECT_EQ(rows, 3) << r.out;
  Json j;
  ASSERT_TRUE(Json::Parse(Run("plan --seq 256K --top 3 --format json").out, &j));
  EXPECT_EQ(j.Find("plans")->items.size(), 3u);
}

TEST_F(PlanOutput, DefaultTableFitsIn120Columns) {
  const Output r = Run("plan");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string table = r.out.substr(0, r.out.find("\nnot applicable"));
  std::istringstream in(table);
  std::string line;
  while (std::getline(in, line)) EXPECT_LE(line.size(), 120u) << line;
}

TEST_F(PlanOutput, CsvNumbersMatchJsonExactly) {
  // Both formats write the same estimates; JSON's numbers are shortest round-trip, so CSV fields
  // equal to them keep full precision (not "1.53932e+13").
  const Output csv = Run("plan --seq 256K --top 3 --format csv");
  const Output json = Run("plan --seq 256K --top 3 --format json");
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  Json j;
  ASSERT_TRUE(Json::Parse(json.out, &j));
  std::istringstream in(csv.out);
  std::string line;
  std::getline(in, line);
  std::vector<std::string> header;
  for (std::istringstream h(line); std::getline(h, line, ',');) header.push_back(line);
  const std::map<std::string, std::string> json_key = {{"time_s", "time_s"},
                                                       {"flops_max", "flops_max"},
                                                       {"bytes_per_gpu", "bytes_per_gpu"},
                                                       {"peak_memory_bytes", "peak_memory_bytes"},
                                                       {"exposed_comm_s", "exposed_comm_s"}};
  for (const Json& plan : j.Find("plans")->items) {
    ASSERT_TRUE(std::getline(in, line));
    // Parameters are quoted and hold no commas: split on commas.
    std::vector<std::string> fields;
    for (std::istringstream f(line); std::getline(f, line, ',');) fields.push_back(line);
    ASSERT_EQ(fields.size(), header.size());
    for (size_t c = 0; c < header.size(); ++c) {
      const auto key = json_key.find(header[c]);
      if (key == json_key.end()) continue;
      EXPECT_EQ(std::strtod(fields[c].c_str(), nullptr), plan.Find(key->second)->number)
          << header[c];
    }
  }
}

TEST_F(PlanOutput, FitSeqHelpShowsNoDefaultItDoesNotHave) {
  // fit --seq only applies with --budget-s, which requires it: no "=1M" default in the help.
  const Output r = Run("fit --help");
  ASSERT_EQ(r.exit_code, 0);
  const size_t at = r.out.find("--seq");
  ASSERT_NE(at, std::string::npos);
  const std::string line = r.out.substr(at, r.out.find('\n', at) - at);
  EXPECT_EQ(line.find('='), std::string::npos) << line;
  EXPECT_NE(line.find("--budget-s"), std::string::npos) << line;
  ExpectInvalid("fit --budget-s 1", {"--budget-s", "needs --seq"});
}

}  // namespace
}  // namespace meshplan
