// `calibrate --format json` (report/runs/calibration_report.h) on a hand-made calibration: the
// cluster, the residuals, every sample and the TOML text, parsed back.
#include "report/runs/calibration_report.h"

#include <gtest/gtest.h>

#include <string>

#include "core/cluster/topology_toml.h"
#include "tests/tools/json_reader.h"

namespace meshplan::report {
namespace {

TEST(CalibrationReport, JsonHasTheClusterTheFitEverySampleAndTheToml) {
  exec::CalibrationResult r;
  r.topology = DefaultTopology();
  r.topology.name = "machine";
  r.kernels.push_back({exec::BlockPiece::kFull, 512, false, 1e9, 2e-3, 2.1e-3});
  r.kernels.push_back({exec::BlockPiece::kFull, 1024, true, 1e10, 3e-2, 2.7e-2});
  r.messages.push_back({4096, 1e-5, 1.2e-5});
  r.sharing.ranks = 2;
  r.sharing.alone_s = 1e-3;
  r.sharing.ends_s = {1.9e-3, 2e-3};
  r.sharing.spread = 0.05;
  r.kernel_median_residual = 0.05;  // |2.1 / 2 - 1| and |2.7 / 3 - 1| = 0.05 and 0.1
  r.kernel_max_residual = 0.1;
  r.message_median_residual = r.message_max_residual = 0.2;  // |1.2 / 1 - 1|
  const std::string toml = "# calibrated\nname = \"machine\"\n";

  const std::string text = CalibrationJson(r, toml);
  ASSERT_EQ(text.back(), '\n');
  testing::Json j;
  ASSERT_TRUE(testing::Json::Parse(text, &j)) << text;
  ASSERT_NE(j.Find("topology"), nullptr) << text;
  EXPECT_EQ(j.Find("topology")->Find("name")->string, "machine");
  EXPECT_EQ(j.Find("topology")->Find("gpus")->number, static_cast<double>(r.topology.num_gpus()));
  EXPECT_DOUBLE_EQ(j.Find("fit")->Find("kernel_median_error")->number, 0.05);
  EXPECT_DOUBLE_EQ(j.Find("fit")->Find("kernel_max_error")->number, 0.1);
  EXPECT_DOUBLE_EQ(j.Find("fit")->Find("message_max_error")->number, 0.2);
  const std::vector<testing::Json>& kernels = j.Find("kernels")->items;
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_EQ(kernels[1].Find("n")->number, 1024);
  EXPECT_EQ(kernels[1].Find("pass")->string, "bwd");
  EXPECT_EQ(kernels[0].Find("pass")->string, "fwd");
  EXPECT_DOUBLE_EQ(kernels[1].Find("measured_s")->number, 3e-2);
  EXPECT_DOUBLE_EQ(kernels[1].Find("model_s")->number, 2.7e-2);
  ASSERT_EQ(j.Find("messages")->items.size(), 1u);
  EXPECT_EQ(j.Find("messages")->items[0].Find("bytes")->number, 4096);
  EXPECT_EQ(j.Find("sharing")->Find("ends_s")->items.size(), 2u);
  // The TOML text reads back unchanged (quotes and line breaks escaped and unescaped).
  EXPECT_EQ(j.Find("toml")->string, toml);
}

}  // namespace
}  // namespace meshplan::report
