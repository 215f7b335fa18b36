// `meshplan topo new` (core/cluster/cluster_template.h): a cluster from a GPU's shipped file and a
// few numbers, derived by hand.
#include "core/cluster/cluster_template.h"

#include <gtest/gtest.h>

#include "tests/planner/test_cluster.h"

namespace meshplan {
namespace {

TEST(ClusterTemplate, TakesTheGpuAndNvlinkOfItsSourceAndOneNicPerGpu) {
  // The source: 8-GPU nodes on a 400 GB/s switch, 5 us between nodes (test_cluster.h). A template
  // of 8 nodes x 4 GPUs with 400 Gb/s NICs: nvlink 4 x 400 GB/s, net 8 x 400 / 8 = 50 GB/s.
  const Topology source = testing::SmallCluster(8, 2);
  ClusterTemplate t;
  t.gpu = "h200";
  t.nodes = 8;
  t.gpus_per_node = 4;
  t.nic_gbits = 400;
  auto cluster = MakeCluster(t, source);
  ASSERT_TRUE(cluster.ok()) << cluster.status().message();
  EXPECT_EQ(cluster->name, "h200-8x4");
  EXPECT_EQ(cluster->num_gpus(), 32);
  EXPECT_EQ(cluster->gpu.model, source.gpu.model);
  ASSERT_EQ(cluster->levels.size(), 2u);
  EXPECT_EQ(cluster->levels[0].group_size, 4);
  EXPECT_DOUBLE_EQ(cluster->levels[0].bandwidth_bytes_per_s, 400e9);
  EXPECT_EQ(cluster->levels[1].group_size, 8);
  EXPECT_DOUBLE_EQ(cluster->levels[1].bandwidth_bytes_per_s, 50e9);
  EXPECT_DOUBLE_EQ(cluster->levels[1].latency_s, 5e-6);
  EXPECT_EQ(cluster->levels[1].kind, LinkKind::kRailFatTree);
}

TEST(ClusterTemplate, TheNetworkLevelIsNamedAndTimedAsAsked) {
  // Default: "ib", as the shipped files name the level between nodes, at the source's 5 us.
  const Topology source = testing::SmallCluster(8, 2);
  ClusterTemplate t;
  t.gpu = "h100";
  t.nodes = 4;
  auto plain = MakeCluster(t, source);
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  EXPECT_EQ(plain->levels[1].name, "ib");
  EXPECT_DOUBLE_EQ(plain->levels[1].latency_s, 5e-6);
  t.net_name = "roce";
  t.net_latency_us = 12.5;
  auto roce = MakeCluster(t, source);
  ASSERT_TRUE(roce.ok()) << roce.status().message();
  EXPECT_EQ(roce->levels[1].name, "roce");
  EXPECT_DOUBLE_EQ(roce->levels[1].latency_s, 12.5e-6);
  const std::string header = ClusterHeader(t, "dgx-h100-1node");
  EXPECT_NE(header.find("--net-name roce --net-latency-us 12.5`"), std::string::npos) << header;
  EXPECT_NE(header.find("# roce: one NIC per GPU"), std::string::npos) << header;
  EXPECT_NE(header.find("fat tree, 12.5 us."), std::string::npos) << header;

  t.net_name = source.levels[0].name;
  auto clash = MakeCluster(t, source);
  ASSERT_FALSE(clash.ok());
  EXPECT_NE(clash.status().message().find("--net-name: '" + source.levels[0].name +
                                          "' is the name of the level inside a node"),
            std::string::npos)
      << clash.status().message();
  t.net_name = "";
  EXPECT_EQ(MakeCluster(t, source).status().message(), "--net-name: must not be empty");
  t.net_name = "ib\nname = \"x\"";  // would break the header's comment line
  EXPECT_EQ(MakeCluster(t, source).status().message(),
            "--net-name: letters, digits, '-', '_' and '.' only");
  t.net_name = "ib";
  t.net_latency_us = 2e6;
  EXPECT_EQ(MakeCluster(t, source).status().message(),
            "--net-latency-us: must be in [0, 1e6] microseconds");
}

TEST(ClusterTemplate, ImpossibleTemplatesNameTheFlag) {
  const Topology source = testing::SmallCluster(8, 2);
  ClusterTemplate t;
  t.gpu = "h100";
  t.gpus_per_node = 16;  // one NVLink domain of the source holds 8
  EXPECT_NE(MakeCluster(t, source).status().message().find("--gpus-per-node: 16 is more than"),
            std::string::npos);
  t.gpus_per_node = 8;
  t.nic_gbits = 0;
  EXPECT_NE(MakeCluster(t, source).status().message().find("--nic-gbps"), std::string::npos);
  t.nic_gbits = 400;
  t.nodes = 0;
  EXPECT_NE(MakeCluster(t, source).status().message().find("--nodes"), std::string::npos);
  EXPECT_EQ(ShippedClusterOfGpu("h200").value(), "hgx-h200-32gpu");
  EXPECT_NE(ShippedClusterOfGpu("mi300").status().message().find("known: h100, h200"),
            std::string::npos);
}

}  // namespace
}  // namespace meshplan
