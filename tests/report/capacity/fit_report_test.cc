// `meshplan fit` rendering: the fitting schemes as a table, the others with their reason, the "+"
// of a length at the --max-seq cap, and JSON with the same answers.
#include "report/capacity/fit_report.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "planner/schemes/registry.h"
#include "tests/planner/test_cluster.h"

namespace meshplan::report {
namespace {

std::vector<capacity::LongestFit> Fits() {
  capacity::LongestFit ring;
  ring.scheme = Scheme("ring");
  ring.found = true;
  ring.granularity = 16;
  ring.seq_len = int64_t{3} << 20;
  ring.at_limit = true;
  ring.params.scheme = Scheme("ring");
  ring.peak_memory_bytes = 2.0 * (1 << 30);
  ring.time_s = 1.5;
  capacity::LongestFit ulysses;
  ulysses.scheme = Scheme("ulysses");
  ulysses.reason = "head-parallel degree 8 exceeds the 4 KV heads";
  return {ring, ulysses};
}

TEST(FitReport, LongestFitTableListsFitsThenReasons) {
  const Topology topology = meshplan::testing::SmallCluster(4, 2);
  const std::string table =
      LongestFitTable(topology, Workload::Default(), 0, int64_t{3} << 20, Fits());
  EXPECT_EQ(table.rfind("cluster:  test-cluster (8 x TestGPU, ", 0), 0u) << table;
  EXPECT_EQ(table.find(" S="), std::string::npos) << table;  // fit chooses the length
  EXPECT_NE(table.find("multiples of 16 tokens = 2 x 8 GPUs"), std::string::npos) << table;
  EXPECT_NE(table.find("  ring    3M+      3145728  2.00 GiB"), std::string::npos) << table;
  EXPECT_NE(table.find("+: reached --max-seq 3M"), std::string::npos) << table;
  EXPECT_NE(table.find("no fitting sequence:\n  ulysses: head-parallel degree 8"),
            std::string::npos)
      << table;
  EXPECT_EQ(table.find("reserved:"), std::string::npos) << table;

  const std::string json =
      LongestFitJson(topology, Workload::Default(), 0, int64_t{3} << 20, Fits());
  EXPECT_EQ(json.back(), '\n');
  EXPECT_NE(json.find("\"granularity\":16"), std::string::npos) << json;
  EXPECT_NE(json.find("\"scheme\":\"ring\",\"found\":true,\"seq_len\":3145728,\"at_limit\":true"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"scheme\":\"ulysses\",\"found\":false,\"reason\":"), std::string::npos)
      << json;
}

TEST(FitReport, SmallestClusterTableAndJson) {
  capacity::SmallestCluster found;
  found.gpus = 64;
  found.topology = "dgx@64";
  found.params.scheme = Scheme("ring");
  found.time_s = 6.5;
  found.peak_memory_bytes = 1e10;
  found.sizes_tried = 8;
  const std::string table =
      SmallestClusterTable(Workload::Default(), 1e9, TimeBudget{10, 1, ""}, found);
  EXPECT_NE(table.find("reserved: "), std::string::npos) << table;
  // Without a model the budget is one attention layer's (never "a step").
  EXPECT_NE(table.find("budget:   10.000 s for one attention layer (fwd+bwd)\n"), std::string::npos)
      << table;
  EXPECT_NE(table.find("smallest cluster: 64 GPUs (dgx@64, 8 sizes tried)\n"), std::string::npos)
      << table;
  const std::string json = SmallestClusterJson(Workload::Default(), TimeBudget{10, 1, ""}, found);
  EXPECT_EQ(json.rfind("{\"topology\":\"dgx@64\",\"gpus\":64,", 0), 0u) << json;
  EXPECT_NE(json.find("\"sizes_tried\":8}\n"), std::string::npos) << json;
}

TEST(FitReport, AModelsBudgetCoversAllItsLayers) {
  // 40 s for 80 layers: 0.5 s per layer; a found plan of 0.4 s per layer takes 32 s for all 80.
  capacity::SmallestCluster found;
  found.gpus = 256;
  found.topology = "dgx@256";
  found.params.scheme = Scheme("ring");
  found.time_s = 0.4;
  const TimeBudget budget{40, 80, "llama-3.1-70b"};
  EXPECT_DOUBLE_EQ(budget.per_layer_s(), 0.5);
  const std::string table = SmallestClusterTable(Workload::Default(), 0, budget, found);
  EXPECT_NE(table.find("budget:   40.000 s for the 80 attention layers of llama-3.1-70b in one "
                       "training step (fwd+bwd): 500.00 ms per layer\n"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("time:             400.00 ms per attention layer, 32.000 s for all 80\n"),
            std::string::npos)
      << table;
  const std::string json = SmallestClusterJson(Workload::Default(), budget, found);
  EXPECT_NE(json.find("\"per_layer_budget_s\":0.5,\"layers\":80,"), std::string::npos) << json;
  EXPECT_NE(json.find("\"all_layers_s\":32,"), std::string::npos) << json;
}

}  // namespace
}  // namespace meshplan::report
