// `meshplan simulate` rendering: per-rank spreads, the slowest ranks first, and the same numbers
// in the table, JSON and CSV.
#include "report/simulation_report.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "planner/context.h"
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
  const std::string csv = SimulationCsv(r);
  EXPECT_EQ(csv.rfind("metric,value\nplan,p.toml\n", 0), 0u) << csv;
  EXPECT_NE(csv.find("\nwall_s,0.5\n"), std::string::npos) << csv;
  // Numbers at full precision: the simulated time reads back as the same double.
  const size_t at = csv.find("\nsimulated_s,");
  ASSERT_NE(at, std::string::npos) << csv;
  EXPECT_EQ(std::strtod(csv.c_str() + at + std::string("\nsimulated_s,").size(), nullptr),
            r.simulated_s())
      << csv;
}

}  // namespace
}  // namespace meshplan::report
