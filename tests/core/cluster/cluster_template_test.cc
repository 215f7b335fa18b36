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

TEST(ClusterTemplate, PcieNodesAreRatedAsNcclRatesThem) {
  // NCCL (NVIDIA/nccl src/graph/topo.cc): a x16 link is 16 lanes x speed / 80 GB/s, speed 120 for
  // Gen4, 240 for Gen5: 24 and 48 GB/s. The L40S has no NVLink, so its default node is PCIe; 8
  // GPUs a node default to 2 sockets of 4; AMD's link between sockets is 16 GB/s (topo.h AMD_BW),
  // so the socket level's oversubscription is 4 GPUs x 24 / 16 = 6: its uplink carries 16 GB/s.
  const Topology source = testing::SmallCluster(8, 2);
  ClusterTemplate t;
  t.gpu = "l40s";
  t.nodes = 2;
  t.nic_gbits = 100;
  auto cluster = MakeCluster(t, source);
  ASSERT_TRUE(cluster.ok()) << cluster.status().message();
  EXPECT_EQ(cluster->num_gpus(), 16);
  ASSERT_EQ(cluster->levels.size(), 3u);
  EXPECT_EQ(cluster->levels[0].name, "pcie");
  EXPECT_EQ(cluster->levels[0].kind, LinkKind::kSwitch);
  EXPECT_EQ(cluster->levels[0].group_size, 4);
  EXPECT_DOUBLE_EQ(cluster->levels[0].bandwidth_bytes_per_s, 24e9);
  EXPECT_DOUBLE_EQ(cluster->levels[0].latency_s, 5.7e-6);  // NCCL's PCI latency, Simple ring
  EXPECT_EQ(cluster->levels[1].name, "socket");
  EXPECT_EQ(cluster->levels[1].kind, LinkKind::kFatTree);
  EXPECT_EQ(cluster->levels[1].group_size, 2);
  EXPECT_DOUBLE_EQ(cluster->levels[1].bandwidth_bytes_per_s, 24e9);
  EXPECT_DOUBLE_EQ(cluster->levels[1].oversubscription, 6.0);
  EXPECT_EQ(cluster->levels[2].name, "ib");
  EXPECT_EQ(cluster->levels[2].group_size, 2);
  EXPECT_DOUBLE_EQ(cluster->levels[2].bandwidth_bytes_per_s, 12.5e9);  // 100 Gb/s / 8
  const std::string header = ClusterHeader(t, "l40s-pcie-8gpu");
  EXPECT_NE(header.find("--node-link pcie --pcie-gen 4 --sockets 2 --cpu amd`"), std::string::npos)
      << header;
  EXPECT_NE(header.find("(oversubscription 6)"), std::string::npos) << header;

  // Gen5 on Sapphire Rapids (SRP_QPI_BW 22): 4 x 48 / 22 = 8.727...; 4 GPUs default to 1
  // socket: no socket level at all.
  t.pcie.generation = 5;
  t.pcie.cpu = "intel-spr";
  auto gen5 = MakeCluster(t, source);
  ASSERT_TRUE(gen5.ok()) << gen5.status().message();
  EXPECT_DOUBLE_EQ(gen5->levels[0].bandwidth_bytes_per_s, 48e9);
  EXPECT_DOUBLE_EQ(gen5->levels[1].oversubscription, 4 * 48.0 / 22);
  t.gpus_per_node = 4;
  auto one_socket = MakeCluster(t, source);
  ASSERT_TRUE(one_socket.ok()) << one_socket.status().message();
  ASSERT_EQ(one_socket->levels.size(), 2u);
  EXPECT_EQ(one_socket->levels[0].group_size, 4);
  EXPECT_EQ(one_socket->levels[1].name, "ib");

  // An NVLink GPU on PCIe when asked (the catalog entry stays the named one).
  ClusterTemplate a100;
  a100.gpu = "a100";
  a100.node_link = "pcie";
  a100.pcie.sockets = 1;
  auto a100_pcie = MakeCluster(a100, source);
  ASSERT_TRUE(a100_pcie.ok()) << a100_pcie.status().message();
  EXPECT_EQ(a100_pcie->levels[0].group_size, 8);
  EXPECT_DOUBLE_EQ(a100_pcie->levels[0].bandwidth_bytes_per_s, 24e9);
  EXPECT_EQ(ShippedClusterOfGpu("rtx4090").value(), "rtx4090-pcie-8gpu");
  EXPECT_EQ(ShippedClusterOfGpu("rtx-4090").value(), "rtx4090-pcie-8gpu");
}

TEST(ClusterTemplate, ImpossiblePcieNodesNameTheFlag) {
  const Topology source = testing::SmallCluster(8, 2);
  auto message = [&](const ClusterTemplate& t) {
    return MakeCluster(t, source).status().message();
  };
  ClusterTemplate t;
  t.gpu = "rtx4090";
  t.node_link = "nvlink";
  EXPECT_NE(message(t).find("--node-link nvlink: the "), std::string::npos) << message(t);
  EXPECT_NE(message(t).find("has no NVLink"), std::string::npos);
  t.node_link = "xgmi";
  EXPECT_NE(message(t).find("--node-link xgmi: the "), std::string::npos) << message(t);
  t.gpu = "mi300x";
  t.node_link = "nvlink";
  EXPECT_NE(message(t).find("joins a node's GPUs over xgmi (--node-link xgmi, or pcie)"),
            std::string::npos)
      << message(t);
  t.gpu = "rtx4090";
  t.node_link = "infiniband";
  EXPECT_EQ(message(t), "--node-link: 'infiniband' is not nvlink, xgmi or pcie");
  t.node_link = "";
  t.pcie.sockets = 3;
  EXPECT_EQ(message(t), "--sockets: 3 does not divide the 8 GPUs of a node evenly");
  t.pcie.sockets = 0;
  t.pcie.generation = 6;
  EXPECT_EQ(message(t), "--pcie-gen: 6 is not 3, 4 or 5");
  t.pcie.generation = 0;
  t.pcie.cpu = "arm";
  EXPECT_NE(message(t).find("--cpu: unknown CPU 'arm'"), std::string::npos);
  t.pcie.cpu = "";
  t.gpus_per_node = 128;
  EXPECT_NE(message(t).find("--gpus-per-node: 128 GPUs on PCIe"), std::string::npos);
  t.gpus_per_node = 8;
  t.net_name = "socket";
  EXPECT_NE(message(t).find("--net-name: 'socket' is the name of a level inside a node"),
            std::string::npos);
  // PCIe flags on an NVLink node would be ignored: refused instead.
  ClusterTemplate h100;
  h100.gpu = "h100";
  h100.pcie.sockets = 2;
  EXPECT_EQ(message(h100), "--sockets: only with --node-link pcie");
  h100.pcie.sockets = 0;
  h100.pcie.cpu = "amd";
  EXPECT_EQ(message(h100), "--cpu: only with --node-link pcie");
  h100.pcie.cpu = "";
  h100.pcie.generation = 4;
  EXPECT_EQ(message(h100), "--pcie-gen: only with --node-link pcie");
}

TEST(ClusterTemplate, GpusBehindPcieSwitchesShareItsUplink) {
  // 8 L40S, 2 per PCIe switch (x16 Gen4 uplink, 24 GB/s), 2 switches a socket, 2 AMD sockets:
  // pcie-switch 2 x 24 peer to peer (P2P on, the L40S default); pcie 2 switches, each uplink
  // 24 GB/s for its 2 GPUs of 24: oversubscription 2; socket: what leaves a socket crosses
  // min(16, 2 switches x 24) = 16 GB/s for 4 x 24: oversubscription 6.
  const Topology source = testing::SmallCluster(8, 2);
  ClusterTemplate t;
  t.gpu = "l40s";
  t.pcie.gpus_per_switch = 2;
  auto p2p = MakeCluster(t, source);
  ASSERT_TRUE(p2p.ok()) << p2p.status().message();
  ASSERT_EQ(p2p->levels.size(), 4u);
  EXPECT_EQ(p2p->levels[0].name, "pcie-switch");
  EXPECT_EQ(p2p->levels[0].group_size, 2);
  EXPECT_DOUBLE_EQ(p2p->levels[0].oversubscription, 1.0);
  EXPECT_EQ(p2p->levels[1].name, "pcie");
  EXPECT_EQ(p2p->levels[1].kind, LinkKind::kFatTree);
  EXPECT_EQ(p2p->levels[1].group_size, 2);
  EXPECT_DOUBLE_EQ(p2p->levels[1].oversubscription, 2.0);
  EXPECT_EQ(p2p->levels[2].name, "socket");
  EXPECT_DOUBLE_EQ(p2p->levels[2].oversubscription, 6.0);
  EXPECT_NE(ClusterHeader(t, "l40s-pcie-8gpu").find("--gpus-per-switch 2 --p2p on`"),
            std::string::npos);
  // Without P2P (the RTX 4090's driver) the GPUs of one switch copy through host memory, up and
  // down its one uplink: 4 GPUs a switch, one switch a socket: pcie-switch oversubscription 4
  // (24 / 4 = 6 GB/s each when all copy), no pcie level (one switch), socket min(16, 24) = 16
  // for 4 x 24: 6.
  t.gpu = "rtx4090";
  t.pcie.gpus_per_switch = 4;
  auto host = MakeCluster(t, source);
  ASSERT_TRUE(host.ok()) << host.status().message();
  ASSERT_EQ(host->levels.size(), 3u);
  EXPECT_EQ(host->levels[0].name, "pcie-switch");
  EXPECT_DOUBLE_EQ(host->levels[0].oversubscription, 4.0);
  EXPECT_EQ(host->levels[1].name, "socket");
  EXPECT_DOUBLE_EQ(host->levels[1].oversubscription, 6.0);
  // Intel Emerald Rapids' 40 GB/s between sockets is more than one switch's uplink: the uplink
  // (24) bounds what leaves the socket, 4 x 24 / 24 = 4.
  t.pcie.cpu = "intel-emr";
  auto emr = MakeCluster(t, source);
  ASSERT_TRUE(emr.ok()) << emr.status().message();
  EXPECT_DOUBLE_EQ(emr->levels[1].oversubscription, 4.0);
  const std::string header = ClusterHeader(t, "rtx4090-pcie-8gpu");
  EXPECT_NE(header.find("--gpus-per-switch 4 --p2p off`"), std::string::npos) << header;
  EXPECT_NE(header.find("P2P off: every copy goes up"), std::string::npos) << header;

  t.pcie.gpus_per_switch = 3;
  EXPECT_EQ(MakeCluster(t, source).status().message(),
            "--gpus-per-switch: 3 does not divide the 4 GPUs of a socket evenly");
  t.pcie.gpus_per_switch = 2;
  t.pcie.p2p = "maybe";
  EXPECT_EQ(MakeCluster(t, source).status().message(), "--p2p: 'maybe' is not on or off");
  ClusterTemplate h100;
  h100.gpu = "h100";
  h100.pcie.p2p = "on";
  EXPECT_EQ(MakeCluster(h100, source).status().message(), "--p2p: only with --node-link pcie");
  h100.pcie.p2p = "";
  h100.pcie.gpus_per_switch = 2;
  EXPECT_EQ(MakeCluster(h100, source).status().message(),
            "--gpus-per-switch: only with --node-link pcie");
}

TEST(ClusterTemplate, AnMi300xNodeIsItsSourcesXgmiMesh) {
  // The source's innermost level is the xGMI full mesh (as topologies/mi300x-8gpu.toml): topo new
  // keeps its kind and link rate at the node's GPU count, so 4 GPUs a node have 3 links each.
  Topology source = testing::SmallCluster(8, 1, 48, 50, 3.6, 5);
  source.levels[0].name = "xgmi";
  source.levels[0].kind = LinkKind::kFullMesh;
  ClusterTemplate t;
  t.gpu = "mi300x";
  t.nodes = 2;
  t.gpus_per_node = 4;
  auto made = MakeCluster(t, source);
  ASSERT_TRUE(made.ok()) << made.status().message();
  EXPECT_EQ(made->levels[0].kind, LinkKind::kFullMesh);
  EXPECT_EQ(made->levels[0].group_size, 4);
  EXPECT_DOUBLE_EQ(made->PairBandwidth(0, 0, 1), 48e9);
  EXPECT_DOUBLE_EQ(made->PortBandwidth(0, 0), 3 * 48e9);
  EXPECT_NE(made->description.find("xGMI full mesh in the node"), std::string::npos);
  const std::string header = ClusterHeader(t, "mi300x-8gpu");
  EXPECT_NE(header.find("a full mesh, its bandwidth_GBps one link's"), std::string::npos) << header;
  // Eight GPUs is the mesh: nine is refused, naming the flag.
  t.gpus_per_node = 9;
  EXPECT_NE(MakeCluster(t, source).status().message().find("--gpus-per-node: 9"),
            std::string::npos);
}

TEST(ClusterTemplate, FabricsPutTheirNodesOnOtherNics) {
  // Four IB nodes and one RoCE node (the mixed cluster): 5 nodes x 8 GPUs at 400 Gb/s,
  // node 4 at 200 Gb/s = 25 GB/s with 8 us; a second fabric on nodes 0 and 2-3 at 100 Gb/s keeps
  // the network's 5 us.
  const Topology source = testing::SmallCluster(8, 2);
  ClusterTemplate t;
  t.gpu = "h100";
  t.nodes = 5;
  auto roce = ParseTemplateFabric("roce:4:200:8");
  ASSERT_TRUE(roce.ok()) << roce.status().message();
  EXPECT_EQ(roce->nodes, (std::vector<std::pair<int64_t, int64_t>>{{4, 4}}));
  t.fabrics.push_back(*roce);
  auto cluster = MakeCluster(t, source);
  ASSERT_TRUE(cluster.ok()) << cluster.status().message();
  ASSERT_EQ(cluster->levels[1].fabrics.size(), 1u);
  EXPECT_DOUBLE_EQ(cluster->PortBandwidth(1, 31), 50e9);  // node 3
  EXPECT_DOUBLE_EQ(cluster->PortBandwidth(1, 32), 25e9);  // node 4
  EXPECT_DOUBLE_EQ(cluster->PortLatencySeconds(1, 39), 8e-6);
  EXPECT_NE(ClusterHeader(t, "dgx-h100-1node").find("--fabric roce:4:200:8"), std::string::npos);
  auto eth = ParseTemplateFabric("eth:0,2-3:100");
  ASSERT_TRUE(eth.ok()) << eth.status().message();
  EXPECT_EQ(eth->nodes, (std::vector<std::pair<int64_t, int64_t>>{{0, 0}, {2, 3}}));
  t.fabrics.push_back(*eth);
  cluster = MakeCluster(t, source);
  ASSERT_TRUE(cluster.ok()) << cluster.status().message();
  EXPECT_DOUBLE_EQ(cluster->PortBandwidth(1, 16), 12.5e9);     // node 2
  EXPECT_DOUBLE_EQ(cluster->PortLatencySeconds(1, 16), 5e-6);  // the network's
}

TEST(ClusterTemplate, BadFabricsNameTheFlagAndThePart) {
  auto message = [](const char* spec) { return ParseTemplateFabric(spec).status().message(); };
  EXPECT_NE(message("roce:4").find("expected NAME:NODES:GBPS"), std::string::npos);
  EXPECT_NE(message(":4:200").find("needs a name"), std::string::npos);
  EXPECT_NE(message("ro ce:4:200").find("letters, digits"), std::string::npos);
  EXPECT_NE(message("roce:4-:200").find("'4-' is not a node index"), std::string::npos);
  EXPECT_NE(message("roce:5-4:200").find("'5-4' is not a node index"), std::string::npos);
  EXPECT_NE(message("roce:4:0").find("(0, 1600] Gb/s"), std::string::npos);
  EXPECT_NE(message("roce:4:200:-1").find("[0, 1e6] microseconds"), std::string::npos);
  const Topology source = testing::SmallCluster(8, 2);
  ClusterTemplate t;
  t.gpu = "h100";
  t.nodes = 4;
  t.fabrics.push_back(*ParseTemplateFabric("roce:4:200"));
  EXPECT_EQ(MakeCluster(t, source).status().message(),
            "--fabric 'roce:4:200': node 4 is not in the 4 nodes (0-3)");
  t.fabrics = {*ParseTemplateFabric("a:1:200"), *ParseTemplateFabric("b:0-1:100")};
  EXPECT_NE(MakeCluster(t, source).status().message().find("--fabric: level[1].fabric[1].units: "
                                                           "unit 1 is in two fabrics"),
            std::string::npos);
}

}  // namespace
}  // namespace meshplan
