// The bench's renderings (report/runs/bench_report.h) on hand-made rows: CSV and JSON numbers, the
// table's notes for points that did not run, and the charts' series.
#include "report/runs/bench_report.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "planner/schemes/registry.h"

namespace meshplan::report {
namespace {

using capacity::BenchOutcome;
using capacity::BenchRow;

std::vector<BenchRow> BenchRows() {
  BenchRow ran;
  ran.mask = "causal";
  ran.seq_len = 2048;
  ran.scheme = Scheme("ring");
  ran.ranks = 4;
  ran.outcome = BenchOutcome::kRan;
  ran.params.scheme = Scheme("ring");
  ran.params.ring = 4;
  ran.flops = 8e9;
  ran.predicted_s = 1e-3;
  ran.median_s = 2e-3;
  ran.min_s = 1.5e-3;
  ran.max_s = 2.5e-3;
  ran.spread = 0.5;
  ran.rank_peak_bytes = 1048576;
  ran.modelled_rank_peak_bytes = 2097152;
  ran.process_peak_rss_bytes = 4194304;
  BenchRow none;
  none.mask = "causal";
  none.seq_len = 2048;
  none.scheme = Scheme("ulysses");
  none.ranks = 4;
  none.outcome = BenchOutcome::kNoPlan;
  none.reason = "head-parallel degree 4 exceeds the 2 KV heads";
  return {ran, none};
}

bool Has(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

TEST(BenchReport, CsvAndJsonCarryTheDerivedFigures) {
  // 8e9 FLOPs over 4 ranks: measured in 2 ms, 8e9 / 4 / 2e-3 = 1e12 = 1 TFLOP/s per rank;
  // predicted in 1 ms, 2 TFLOP/s per rank; error (2 - 1) / 1 = +100%.
  const std::string csv = BenchCsv(BenchRows());
  EXPECT_TRUE(Has(csv, "\ncausal,2048,ring,4,ran,"));
  EXPECT_TRUE(Has(csv, ",8e+09,0.001,0.002,0.0015,0.0025,0.5,100,1,2,1048576,2097152,4194304,\n"))
      << csv;
  EXPECT_TRUE(Has(csv,
                  "\ncausal,2048,ulysses,4,no plan,,,,,,,,,,,,,,head-parallel degree 4 exceeds the "
                  "2 KV heads\n"))
      << csv;
  const std::string json =
      BenchJson(BenchRows(), {"dgx-h100-4gpu", "backend cpu", "batch 1", 3, Workload{}});
  // The workload as fields (issue 45): the context's base is Workload::Default's (batch 1, 64/8
  // heads of 128, bf16, fp32 partials, fwd+bwd); a bench varies the length and the mask, so
  // neither is a field; the text is the context's.
  EXPECT_TRUE(Has(json,
                  "\"context\":{\"topology\":\"dgx-h100-4gpu\",\"run\":\"backend "
                  "cpu\",\"workload\":{\"batch\":1,\"heads\":64,\"kv_heads\":8,\"head_dim\":128,"
                  "\"dtype\":\"bf16\",\"partial_dtype\":\"fp32\",\"pass\":\"fwd+bwd\",\"text\":"
                  "\"batch 1\"},\"repeat\":3}"))
      << json;
  EXPECT_TRUE(Has(json, "\"error_pct\":100,\"tflops_per_rank\":1,\"predicted_tflops_per_rank\":2,"))
      << json;
  EXPECT_TRUE(Has(
      json, "\"outcome\":\"no plan\",\"reason\":\"head-parallel degree 4 exceeds the 2 KV heads\""))
      << json;
}

TEST(BenchReport, TableNotesWhyAPointDidNotRun) {
  const std::string t = RenderBenchTable(
      BenchRows(), {"dgx-h100-4gpu (4 x H100)", "backend cpu", "batch 1", 3, Workload{}});
  EXPECT_TRUE(Has(t, "mask causal:\n")) << t;
  EXPECT_TRUE(Has(t, "+100.0%")) << t;
  EXPECT_TRUE(Has(t, "no plan (note 1)")) << t;
  EXPECT_TRUE(Has(t, "  note 1: head-parallel degree 4 exceeds the 2 KV heads\n")) << t;
}

TEST(BenchReport, ChartsPairMeasuredWithPredictedAndModel) {
  const plot::LineChart tflops = BenchTflopsChart(BenchRows(), "causal");
  ASSERT_EQ(tflops.series.size(), 2u);  // ring measured and predicted; ulysses did not run
  EXPECT_EQ(tflops.series[0].name, "ring");
  EXPECT_EQ(tflops.series[1].name, "ring (predicted)");
  EXPECT_EQ(tflops.series[0].points, (std::vector<std::pair<double, double>>{{2048, 1}}));
  EXPECT_EQ(tflops.series[1].points, (std::vector<std::pair<double, double>>{{2048, 2}}));
  const plot::LineChart memory = BenchMemoryChart(BenchRows(), "causal");
  ASSERT_EQ(memory.series.size(), 2u);
  EXPECT_EQ(memory.series[1].name, "ring (model)");
  EXPECT_EQ(memory.series[0].points, (std::vector<std::pair<double, double>>{{2048, 1}}));  // 1 MiB
  EXPECT_EQ(memory.series[1].points, (std::vector<std::pair<double, double>>{{2048, 2}}));  // 2 MiB

  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / "meshplan_bench_charts_test";
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(WriteBenchCharts(BenchRows(), dir.string()).ok());
  EXPECT_TRUE(std::filesystem::exists(dir / "tflops-causal.svg"));
  EXPECT_TRUE(std::filesystem::exists(dir / "memory-causal.svg"));
  std::filesystem::remove_all(dir);
  std::vector<BenchRow> none = {BenchRows()[1]};
  EXPECT_EQ(WriteBenchCharts(none, dir.string()).code(), ErrorCode::kInvalidInput);
}

}  // namespace
}  // namespace meshplan::report
