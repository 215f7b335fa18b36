// Issue 32: `topo list --format json` and `topo show --format json`, the clusters for scripts: one
// object per file with its levels, the same clusters `topo list` shows.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "core/cluster/topology_toml.h"
#include "tests/tools/cli_fixture.h"
#include "tests/tools/json_reader.h"

namespace meshplan {
namespace {

namespace fs = std::filesystem;
using TopoListJson = testing::CliFixture;

TEST_F(TopoListJson, ListsEveryShippedClusterWithItsLevels) {
  const testing::CliResult r = Run("topo list --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  testing::Json j;
  ASSERT_TRUE(testing::Json::Parse(r.out, &j)) << r.out.substr(0, 300);
  const testing::Json* clusters = j.Find("clusters");
  ASSERT_NE(clusters, nullptr);
  // One object per shipped file.
  size_t files = 0;
  for (const auto& entry : fs::directory_iterator(std::string(MESHPLAN_SOURCE_DIR) + "/topologies"))
    files += entry.path().extension() == ".toml" ? 1 : 0;
  EXPECT_EQ(clusters->items.size(), files);
  // dgx-h100-4node, read independently from its file: 32 GPUs; ib is its second level.
  auto file =
      LoadTopologyFile(std::string(MESHPLAN_SOURCE_DIR) + "/topologies/dgx-h100-4node.toml");
  ASSERT_TRUE(file.ok()) << file.status().message();
  bool found = false;
  for (const testing::Json& c : clusters->items) {
    if (c.Find("name")->string != "dgx-h100-4node") continue;
    found = true;
    EXPECT_EQ(c.Find("gpus")->number, static_cast<double>(file->num_gpus()));
    const testing::Json* levels = c.Find("levels");
    ASSERT_EQ(levels->items.size(), file->levels.size());
    EXPECT_EQ(levels->items[1].Find("name")->string, "ib");
    EXPECT_DOUBLE_EQ(levels->items[1].Find("bandwidth_GBps")->number,
                     file->levels[1].bandwidth_bytes_per_s / 1e9);
  }
  EXPECT_TRUE(found) << r.out.substr(0, 300);
  ExpectRefusedWith("topo list --format csv", {"--format", "csv"});
}

TEST_F(TopoListJson, ShowGivesOneClusterAsJson) {
  const testing::CliResult r = Run("topo show dgx-h100-4node --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  testing::Json j;
  ASSERT_TRUE(testing::Json::Parse(r.out, &j)) << r.out.substr(0, 300);
  auto file =
      LoadTopologyFile(std::string(MESHPLAN_SOURCE_DIR) + "/topologies/dgx-h100-4node.toml");
  ASSERT_TRUE(file.ok()) << file.status().message();
  EXPECT_EQ(j.Find("name")->string, file->name);
  EXPECT_EQ(j.Find("gpus")->number, static_cast<double>(file->num_gpus()));
  EXPECT_EQ(j.Find("levels")->items.size(), file->levels.size());
  EXPECT_DOUBLE_EQ(j.Find("levels")->items[0].Find("latency_us")->number,
                   file->levels[0].latency_s * 1e6);
}

}  // namespace
}  // namespace meshplan
