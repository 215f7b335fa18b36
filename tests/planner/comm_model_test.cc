// Communication model: levels, bytes per level and pattern times worked out by hand.
#include "planner/comm_model.h"

#include <gtest/gtest.h>

#include "tests/planner/test_cluster.h"

namespace meshplan::planner {
namespace {

// 2 nodes x 4 GPUs; NVLink 400 GB/s, 1 us; IB 50 GB/s, 5 us.
class CommModelTest : public ::testing::Test {
 protected:
  Topology t_ = testing::SmallCluster(4, 2, 400, 50, 1, 5);
};

TEST_F(CommModelTest, RingOverAllGpusIsBoundByTheNodeCrossingHop) {
  CommModel model(t_);
  const Placement ring({{"cp", 8}}, {"cp"});
  Traffic traffic(8, 2);
  // GPU g sends to g-1; GPUs 0 (-> 7) and 4 (-> 3) cross nodes. One shift of 1 MB:
  // max(1us + 1e6/400e9, 5us + 1e6/50e9) = 5us + 20us = 25us.
  EXPECT_NEAR(model.RingShift(ring, 0, 1e6, 3, &traffic), 25e-6, 1e-12);
  const auto per_level = traffic.MaxPerLevel();
  EXPECT_DOUBLE_EQ(per_level[0], 3e6);  // GPUs 1-3, 5-7: three shifts over NVLink
  EXPECT_DOUBLE_EQ(per_level[1], 3e6);  // GPUs 0 and 4: three shifts over IB
  EXPECT_DOUBLE_EQ(traffic.MaxTotal(), 3e6);
}

TEST_F(CommModelTest, PlacementDecidesWhichRingCrossesNodes) {
  CommModel model(t_);
  // Mesh 2 x 4 with q innermost: q neighbours are adjacent GPUs (same node), kv neighbours are
  // 2 GPUs apart: 0->6, 1->7, 4->2, 5->3 cross nodes.
  const Placement q_inner({{"q", 2}, {"kv", 4}}, {"q", "kv"});
  EXPECT_NEAR(model.RingShift(q_inner, 0, 1e6, 1, nullptr), 1e-6 + 1e6 / 400e9, 1e-12);
  EXPECT_NEAR(model.RingShift(q_inner, 1, 1e6, 1, nullptr), 5e-6 + 1e6 / 50e9, 1e-12);
  EXPECT_EQ(model.BottleneckLevel(q_inner, 0, 1e6), 0);
  EXPECT_EQ(model.BottleneckLevel(q_inner, 1, 1e6), 1);
  // kv innermost: the kv ring (size 4) is one node; the q ring jumps 4 GPUs: always IB.
  const Placement kv_inner({{"q", 2}, {"kv", 4}}, {"kv", "q"});
  EXPECT_NEAR(model.RingShift(kv_inner, 1, 1e6, 1, nullptr), 1e-6 + 1e6 / 400e9, 1e-12);
  EXPECT_NEAR(model.RingShift(kv_inner, 0, 1e6, 1, nullptr), 5e-6 + 1e6 / 50e9, 1e-12);
}

TEST_F(CommModelTest, RingCollectiveIsPMinusOneShifts) {
  CommModel model(t_);
  // The cluster's second level has one GPU per node: a ring of 2 over GPUs 0 and 4 (stride 4)
  // crosses nodes with one member per node, so its step stays on the sender's own NIC.
  const Placement pair({{"cp", 2}, {"x", 4}}, {"x", "cp"});
  Traffic traffic(8, 2);
  // All-gather of a 1 MB shard over 2 ranks: 1 ring step of 5 us + 1 MB / 50 GB/s = 25 us.
  EXPECT_NEAR(model.RingCollective(pair, 0, 1e6, &traffic), 25e-6, 1e-12);
  EXPECT_DOUBLE_EQ(traffic.MaxPerLevel()[1], 1e6);
  // Inside a node (4 ranks, NVLink): 3 steps of 1 us + 1 MB / 400 GB/s = 3.5 us.
  const Placement node({{"cp", 4}, {"x", 2}}, {"cp", "x"});
  EXPECT_NEAR(model.RingCollective(node, 0, 1e6, nullptr), 3 * 3.5e-6, 1e-12);
}

TEST_F(CommModelTest, ARingCollectiveLeavingANodeUsesEveryNicOfTheNode) {
  CommModel model(t_);
  // 8 ranks over 2 nodes of 4: GPUs 3 -> 4 and 7 -> 0 cross nodes. NCCL's channels rotate the
  // ring, so each crossing is spread over the NICs of the 4 members in the sender's node: the
  // sender's NIC carries 1/4 of a step. A step takes the slower of NVLink (1 us + 1 MB / 400
  // GB/s = 3.5 us) and IB (5 us + 0.25 MB / 50 GB/s = 10 us): 7 steps of 10 us. Before the
  // spread the IB step was 25 us (the whole MB on one NIC).
  const Placement ring({{"cp", 8}}, {"cp"});
  Traffic traffic(8, 2);
  EXPECT_NEAR(model.RingCollective(ring, 0, 1e6, &traffic), 7 * 10e-6, 1e-12);
  // Bytes per GPU: 7 MB over NVLink for the GPUs inside; GPU 3's NIC carries 7 x 0.25 MB.
  EXPECT_DOUBLE_EQ(traffic.MaxPerLevel()[0], 7e6);
  EXPECT_DOUBLE_EQ(traffic.MaxPerLevel()[1], 1.75e6);
  // A point-to-point shift over the same crossing keeps the whole MB on the sender's NIC.
  EXPECT_NEAR(model.RingShift(ring, 0, 1e6, 1, nullptr), 25e-6, 1e-12);
}

TEST_F(CommModelTest, AllToAllInsideANodeUsesNvlinkOnly) {
  CommModel model(t_);
  const Placement p({{"ulysses", 4}, {"ring", 2}}, {"ulysses", "ring"});
  Traffic traffic(8, 2);
  // 4 MB per rank over 4 ranks: 1 MB to each of 3 peers in the node.
  // Time 3e6/400e9 + 3 * 1us = 7.5 + 3 = 10.5 us.
  EXPECT_NEAR(model.AllToAll(p, 0, 4e6, &traffic), 10.5e-6, 1e-12);
  const auto per_level = traffic.MaxPerLevel();
  EXPECT_DOUBLE_EQ(per_level[0], 3e6);
  EXPECT_DOUBLE_EQ(per_level[1], 0.0);
}

TEST(CommModelOversubscribed, AShiftSharesTheUplinkOnlyWithTheFlowsThatCrossIt) {
  // A PCIe server's node (topologies/README.md, "PCIe nodes"): 2 sockets of 4 GPUs, each GPU at
  // 24 GB/s, the sockets joined by a 16 GB/s link: oversubscription 4 x 24 / 16 = 6.
  Topology t = testing::SmallCluster(4, 2, 24, 24, 0, 0);
  t.levels[1].oversubscription = 6;
  CommModel model(t);
  // A ring over all 8: GPUs 0 (-> 7) and 4 (-> 3) cross, one flow out of and into each socket,
  // which then has the socket link to itself: min(24, 16) = 16 GB/s, 1 MB in 62.5 us (weight
  // max(1, 6 x 1 / 4) = 1.5 over 24 GB/s), not the 4 GB/s of all four GPUs crossing at once.
  const Placement ring({{"cp", 8}}, {"cp"});
  EXPECT_NEAR(model.RingShift(ring, 0, 1e6, 1, nullptr), 1e6 / 16e9, 1e-12);
  // A ring of 2 over GPUs g and g + 4 (four rings at once, stride 4): all four GPUs of a socket
  // cross together and share its 16 GB/s, 4 GB/s each: 1 MB in 250 us (weight 6).
  const Placement pairs({{"cp", 2}, {"x", 4}}, {"x", "cp"});
  EXPECT_NEAR(model.RingShift(pairs, 0, 1e6, 1, nullptr), 1e6 / 4e9, 1e-12);
  // An all-to-all over all 8: every GPU sends 4 of its 8 pieces across, all at once: 4 x (1 MB
  // / 8) x 6 / 24 GB/s = 125 us (the intercept: 7 peers x 0 us).
  EXPECT_NEAR(model.AllToAll(ring, 0, 1e6, nullptr), 4 * (1e6 / 8) * 6 / 24e9, 1e-12);
}

TEST(CommModelOversubscribed, WithoutP2pTheGpusOfOneSwitchShareItsUplink) {
  // 4 GPUs behind one PCIe switch, P2P off (topo new --gpu rtx4090 --gpus-per-switch 4): the
  // innermost level's oversubscription 4 is the switch's one 24 GB/s uplink over its 4 GPUs. A
  // ring shift inside the switch (every GPU copying at once) runs at 24 / 4 = 6 GB/s: 1 MB in
  // 1e6 / 6e9 s (weight max(1, 4 x 1 flow / 1 GPU) = 4).
  Topology t = testing::SmallCluster(4, 1, 24, 24, 0, 0);
  t.levels[0].oversubscription = 4;
  CommModel model(t);
  const Placement ring({{"cp", 4}}, {"cp"});
  EXPECT_NEAR(model.RingShift(ring, 0, 1e6, 1, nullptr), 1e6 / 6e9, 1e-12);
}

// A node of 8 GPUs on a full mesh (an MI300X's xGMI: topologies/mi300x-8gpu.toml): one 48 GB/s
// link per GPU pair and direction, 3 us a message; 2 such nodes over a 50 GB/s, 5 us network.
Topology FullMeshCluster() {
  Topology t = testing::SmallCluster(8, 2, 48, 50, 3, 5);
  t.levels[0].kind = LinkKind::kFullMesh;
  return t;
}

TEST(CommModelFullMesh, AShiftCrossesOneLinkAndAnAllToAllEvery) {
  const Topology t = FullMeshCluster();
  ASSERT_TRUE(t.Validate().ok());
  CommModel model(t);
  // A ring shift over one node: each GPU sends to its own peer over the link between them, one
  // flow a link: 3 us + 1 MB / 48 GB/s. (A switch of 7 x 48 GB/s ports would give 1 MB / 336 GB/s.)
  const Placement ring({{"cp", 8}, {"n", 2}}, {"cp", "n"});
  EXPECT_NEAR(model.RingShift(ring, 0, 1e6, 1, nullptr), 3e-6 + 1e6 / 48e9, 1e-12);
  // An all-to-all over the node, 1 MB a rank: 125 KB to each of 7 peers, each over its own link,
  // all at once: 125 KB / 48 GB/s, plus 7 x 3 us of latency.
  EXPECT_NEAR(model.AllToAll(ring, 0, 1e6, nullptr), 1e6 / 8 / 48e9 + 7 * 3e-6, 1e-12);
  // Over 4 of the node's GPUs (GPUs 0-3 and 4-7): still one link per peer, 250 KB / 48 GB/s
  // plus 3 x 3 us, not the GPU's 7 links' worth (3 x 250 KB / 336 GB/s).
  const Placement quarter({{"u", 4}, {"x", 4}}, {"u", "x"});
  EXPECT_NEAR(model.AllToAll(quarter, 0, 1e6, nullptr), 1e6 / 4 / 48e9 + 3 * 3e-6, 1e-12);
}

TEST(CommModelFullMesh, ARingCollectiveStepIsSpreadOverTheLinksToEveryMember) {
  const Topology t = FullMeshCluster();
  CommModel model(t);
  // An all-gather of 1 MB shards over the node's 8 GPUs: 7 steps; RCCL's rings (permutations
  // that together use every link) carry a step over the sender's 7 links, 1/7 each: per step 3 us
  // + (1 MB / 7) / 48 GB/s.
  const Placement node({{"cp", 8}, {"n", 2}}, {"cp", "n"});
  EXPECT_NEAR(model.RingCollective(node, 0, 1e6, nullptr), 7 * (3e-6 + 1e6 / 7 / 48e9), 1e-12);
  // Over GPUs {0, 2, 4, 6} (stride 2): 3 links to the other members, 1/3 of a step each.
  const Placement evens({{"x", 2}, {"cp", 4}, {"n", 2}}, {"x", "cp", "n"});
  EXPECT_NEAR(model.RingCollective(evens, 1, 1e6, nullptr), 3 * (3e-6 + 1e6 / 3 / 48e9), 1e-12);
  // Over 2 GPUs: the one link between them carries the whole step.
  const Placement two({{"cp", 2}, {"x", 8}}, {"cp", "x"});
  EXPECT_NEAR(model.RingCollective(two, 0, 1e6, nullptr), 3e-6 + 1e6 / 48e9, 1e-12);
}

TEST(CommModelTorus, HopsMultiplyTheTransferTime) {
  // One torus level of 4 x 4 GPUs at 100 GB/s, 2 us; GPU g sits at (g mod 4, g / 4).
  Topology t;
  t.name = "torus";
  t.gpu.model = "x";
  t.gpu.memory_bytes = 1e9;
  t.gpu.hbm_bytes_per_s = 1e12;
  t.gpu.peak_tflops = {{DType::kBf16, 100}};
  t.gpu.attention_efficiency = {{1, 1.0}};
  t.levels.push_back({"torus", LinkKind::kTorus, 16, 100e9, 2e-6, 1.0, {4, 4}, {}});
  ASSERT_TRUE(t.Validate().ok());
  CommModel model(t);
  // y innermost (GPU stride 1, size 8), so x (size 2) has GPU stride 8: the x ring pairs GPU g
  // with g +- 8, e.g. (0,0) with (0,2): distance 2 in the second torus dimension. Every GPU's
  // 1 MB crosses two links and every link carries two such transfers (its own first hop and a
  // neighbour's second), and each hop pays the 2 us latency (issue 15: per-hop latency):
  // 2 * 2us + 2 * 1e6/100e9 = 24 us.
  const Placement p({{"x", 2}, {"y", 8}}, {"y", "x"});
  EXPECT_NEAR(model.RingShift(p, 0, 1e6, 1, nullptr), 2 * 2e-6 + 2 * 1e6 / 100e9, 1e-12);
}

// Mixed fabrics: node 1 of the 2 x 4 cluster on a 25 GB/s, 8 us fabric (node 0 keeps IB's 50
// GB/s, 5 us). A message between the nodes is as fast as its slower end.
Topology MixedFabricCluster() {
  Topology t = testing::SmallCluster(4, 2, 400, 50, 1, 5);
  t.levels[1].fabrics.push_back({"roce", {{1, 1}}, 25e9, 8e-6});
  return t;
}

TEST(CommModelFabrics, ARingCrossingToTheSlowerNodeRunsAtItsPorts) {
  const Topology t = MixedFabricCluster();
  ASSERT_TRUE(t.Validate().ok());
  CommModel model(t);
  const Placement ring({{"cp", 8}}, {"cp"});
  // GPU 0 -> 7 and 4 -> 3 cross the nodes, each with node 1 at one end: 8 us + 1 MB / 25 GB/s =
  // 48 us (all-IB: 25 us, RingOverAllGpusIsBoundByTheNodeCrossingHop).
  EXPECT_NEAR(model.RingShift(ring, 0, 1e6, 1, nullptr), 48e-6, 1e-12);
  EXPECT_EQ(model.BottleneckLevel(ring, 0, 1e6), 1);
}

TEST(CommModelFabrics, AnAllToAllEndsWithTheSlowestFabricsGpus) {
  const Topology t = MixedFabricCluster();
  CommModel model(t);
  const Placement all({{"u", 8}}, {"u"});
  // 1 MB per rank, 125 KB to each of 7 peers: 3 over NVLink, 4 over the network. A GPU of node 1
  // sends its 4 x 125 KB through its 25 GB/s port: 20 us (NVLink's 3 x 125 KB / 400 GB/s is less),
  // and waits 7 x 8 us of latency (the network's pairs all have node 1 at one end): 76 us. Node
  // 0's GPUs: 10 us + 56 us = 66 us. The pattern ends at 76 us (all-IB: 10 + 7 x 5 = 45 us).
  EXPECT_NEAR(model.AllToAll(all, 0, 1e6, nullptr), 76e-6, 1e-12);
  const Topology ib = testing::SmallCluster(4, 2, 400, 50, 1, 5);
  CommModel uniform(ib);
  EXPECT_NEAR(uniform.AllToAll(all, 0, 1e6, nullptr), 45e-6, 1e-12);
}

}  // namespace
}  // namespace meshplan::planner
