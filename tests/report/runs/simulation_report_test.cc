// `meshplan simulate` rendering: per-rank spreads, the slowest ranks first, and the same numbers
// in the table, JSON and CSV.
#include "report/runs/simulation_report.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

#include "planner/context.h"
#include "planner/schemes/registry.h"
#include "planner/search.h"
#include "tests/planner/test_cluster.h"

namespace meshplan::report {
namespace {

TEST(SimulationReport, SpreadsSlowestRanksAndFormats) {
  const Topology topology = meshplan::testing::SmallCluster(4, 2);
  // The context refers to the workload and the topology: both outlive it.
  const Workload workload = meshplan::testing::SmallWorkload();
  const planner::PlanContext ctx(workload, topology);
  const planner::SearchResult result = planner::Search(ctx, {});
  ASSERT_FALSE(result.ranked.empty());
  const Plan plan = planner::MakePlan(ctx, result.ranked.front().params);
  auto sim = sim::SimulatePlan(plan, topology);
  ASSERT_TRUE(sim.ok()) << sim.status().message();

  const SimulationReport r = MakeSimulationReport(plan, topology, *sim, "p.toml", 0.5, 3);
  ASSERT_EQ(r.slowest.size(), 3u);
  for (size_t i = 1; i < r.slowest.size(); ++i)
    EXPECT_GE(r.finish_s(r.slowest[i - 1]), r.finish_s(r.slowest[i]));
  EXPECT_GE(r.compute.mean, r.compute.min * (1 - 1e-12));  // equal up to the rounding of the sum
  EXPECT_LE(r.compute.mean, r.compute.max * (1 + 1e-12));
  EXPECT_EQ(MakeSimulationReport(plan, topology, *sim, "p.toml", 0.5, 0).slowest.size(),
            sim->result.ranks.size());

  const std::string table = SimulationTable(r);
  EXPECT_NE(table.find("(p.toml)"), std::string::npos) << table;
  EXPECT_NE(table.find("per rank over 8 ranks:"), std::string::npos) << table;
  const std::string json = SimulationJson(r, "trace.json");
  EXPECT_NE(json.find("\"trace\":\"trace.json\""), std::string::npos) << json;
  EXPECT_EQ(SimulationJson(r, "").find("\"trace\""), std::string::npos);
  // `--format metrics` (issue 32: `--format csv` is now one row per run, below): the metric,value
  // list as before.
  const std::string csv = SimulationMetricsCsv(r);
  EXPECT_EQ(csv.rfind("metric,value\nplan,p.toml\n", 0), 0u) << csv;
  EXPECT_NE(csv.find("\nwall_s,0.5\n"), std::string::npos) << csv;
  // Numbers at full precision: the simulated time reads back as the same double.
  const size_t at = csv.find("\nsimulated_s,");
  ASSERT_NE(at, std::string::npos) << csv;
  EXPECT_EQ(std::strtod(csv.c_str() + at + std::string("\nsimulated_s,").size(), nullptr),
            r.simulated_s())
      << csv;

  // One row per run under a header, the same columns as the metric list's fixed part.
  const std::string row_csv = SimulationCsv(r);
  const size_t header_end = row_csv.find('\n');
  ASSERT_NE(header_end, std::string::npos) << row_csv;
  const std::string header = row_csv.substr(0, header_end);
  const std::string row = row_csv.substr(header_end + 1);
  EXPECT_EQ(header.rfind("plan,scheme,parameters,batch,seq_len,q_heads,kv_heads,head_dim,dtype,"
                         "mask,pass,topology,gpus,simulated_s,estimated_s,difference_pct,",
                         0),
            0u)
      << header;
  EXPECT_EQ(row.rfind("p.toml," + std::string(SchemeName(plan.params.scheme)) + ",", 0), 0u) << row;
  EXPECT_EQ(std::count(row.begin(), row.end(), '\n'), 1) << row;  // one line
  // Without the header: exactly the row, for appending.
  EXPECT_EQ(SimulationCsv(r, /*with_header=*/false), row);
  // The last column is the command's wall time, 0.5 s as given.
  EXPECT_TRUE(header.size() > 7 && header.substr(header.size() - 7) == ",wall_s") << header;
  EXPECT_EQ(row.substr(row.rfind(',') + 1), "0.5\n") << row;
  // bytes_by_level: every level of the cluster by name, their bytes the replay's level bytes.
  std::string levels;
  for (const sim::LevelStats& l : sim->result.levels)
    levels += (levels.empty() ? "" : ";") + l.name + "=" + std::to_string(std::llround(l.bytes));
  EXPECT_NE(row.find("," + levels + ","), std::string::npos) << levels << "\n" << row;
}

}  // namespace
}  // namespace meshplan::report
