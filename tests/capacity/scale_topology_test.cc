// Scaling a topology to another GPU count: only the outermost level changes.
#include "capacity/scale_topology.h"

#include <gtest/gtest.h>

#include <string>

#include "core/cluster/topology_toml.h"

namespace meshplan::capacity {
namespace {

TEST(ScaleTopology, ChangesTheOutermostLevelOnly) {
  const Topology dgx = DefaultTopology();  // 32 nodes x 8 GPUs
  ASSERT_EQ(dgx.num_gpus(), 256);
  auto scaled = ScaleTopology(dgx, 64);
  ASSERT_TRUE(scaled.ok()) << scaled.status().message();
  EXPECT_EQ(scaled->num_gpus(), 64);
  EXPECT_EQ(scaled->levels[0].group_size, 8);  // GPUs per node unchanged
  EXPECT_EQ(scaled->levels[1].group_size, 8);  // 8 nodes
  EXPECT_EQ(scaled->name, "dgx-h100-32node@64");
  EXPECT_DOUBLE_EQ(scaled->levels[1].bandwidth_bytes_per_s, dgx.levels[1].bandwidth_bytes_per_s);

  auto same = ScaleTopology(dgx, 256);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->name, dgx.name);

  auto bigger = ScaleTopology(dgx, 1024);
  ASSERT_TRUE(bigger.ok());
  EXPECT_EQ(bigger->levels[1].group_size, 128);
}

TEST(ScaleTopology, RejectsCountsThatAreNotWholeNodes) {
  const Topology dgx = DefaultTopology();
  for (int64_t gpus : {12, 0, -8, 4}) {
    auto scaled = ScaleTopology(dgx, gpus);
    ASSERT_FALSE(scaled.ok()) << gpus;
    EXPECT_NE(scaled.status().message().find("multiple of the 8 GPUs"), std::string::npos)
        << scaled.status().message();
    EXPECT_NE(scaled.status().message().find(std::to_string(gpus)), std::string::npos);
  }
}

TEST(ScaleTopology, TorusKeepsItsOtherDimensions) {
  auto torus = LoadTopologyFile(std::string(MESHPLAN_SOURCE_DIR) +
                                "/topologies/hypothetical-torus-16x16.toml");
  ASSERT_TRUE(torus.ok()) << torus.status().message();
  const NetworkLevel& outer = torus->levels.back();
  ASSERT_EQ(outer.kind, LinkKind::kTorus);
  const int64_t inner = torus->num_gpus() / outer.group_size;
  int64_t others = 1;
  for (size_t i = 0; i + 1 < outer.torus_dims.size(); ++i) others *= outer.torus_dims[i];
  auto scaled = ScaleTopology(*torus, inner * others * 2);
  ASSERT_TRUE(scaled.ok()) << scaled.status().message();
  EXPECT_EQ(scaled->levels.back().torus_dims.back(), 2);
  if (others > 1) {
    EXPECT_FALSE(ScaleTopology(*torus, inner * (others + 1)).ok());
  }
}

}  // namespace
}  // namespace meshplan::capacity
