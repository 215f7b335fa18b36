// Routes on ring and torus levels (issue 15): a transfer crosses every neighbour link of its
// route, pays the level's latency per hop, and shares a link only with flows that use it. Golden
// timings with the arithmetic written out; time is integer nanoseconds.
#include <gtest/gtest.h>

#include "planner/strategy.h"
#include "simulator/simulate.h"
#include "tests/simulator/golden_helpers.h"

namespace meshplan::sim {
namespace {

Topology Base() { return testing::TestGpuCluster("routes"); }

// 16 GPUs on a 4 x 4 torus, GPU g at (x, y) = (g mod 4, g / 4): 100 GB/s per direction
// (100 bytes/ns) per GPU and per neighbour link, 2 us (2000 ns) per hop.
Topology Torus4x4() {
  Topology t = Base();
  t.levels.push_back({"torus", LinkKind::kTorus, 16, 100e9, 2e-6, 1.0, {4, 4}, {}});
  return t;
}

using testing::Empty;
using testing::Identity;

// Rank `from` sends `bytes` to rank `to` (one op each side).
void Transfer(Schedule& s, int32_t from, int32_t to, int64_t bytes) {
  s.ranks[from].Add(testing::Send(to, bytes));
  s.ranks[to].Add(testing::Recv(from, bytes));
}

TEST(TorusRoutes, HopsFollowTheRouteDimensionByDimension) {
  // GPU 0 (0,0) to GPU 10 (2,2): x first, upwards on the tie (2 of 4 either way), then y:
  // units 0 -> 1 -> 2 along dimension 0, then 2 -> 6 -> 10 along dimension 1.
  const Topology t = Torus4x4();
  std::vector<std::tuple<int64_t, int, bool>> hops;
  t.ForEachHop(0, 0, 10, [&](int64_t unit, int dim, bool up) { hops.emplace_back(unit, dim, up); });
  const std::vector<std::tuple<int64_t, int, bool>> want = {
      {0, 0, true}, {1, 0, true}, {2, 1, true}, {6, 1, true}};
  EXPECT_EQ(hops, want);
  // GPU 3 (3,0) to GPU 12 (0,3): one hop up in x (3 -> 0 wraps), one hop down in y (0 -> 3 wraps).
  hops.clear();
  t.ForEachHop(0, 3, 12, [&](int64_t unit, int dim, bool up) { hops.emplace_back(unit, dim, up); });
  const std::vector<std::tuple<int64_t, int, bool>> want2 = {{3, 0, true}, {0, 1, false}};
  EXPECT_EQ(hops, want2);
}

TEST(TorusRoutes, RouteLengthIsHopsForEveryPair) {
  // Independent check of ForEachHop against Topology::Hops (the planner's distance) on a 3 x 5
  // torus and on a ring of 6 nodes of 2 GPUs, every ordered pair on a different unit.
  Topology torus = Base();
  torus.levels.push_back({"torus", LinkKind::kTorus, 15, 100e9, 1e-6, 1.0, {3, 5}, {}});
  Topology ring = Base();
  ring.levels.push_back({"node", LinkKind::kSwitch, 2, 100e9, 1e-6, 1.0, {}, {}});
  ring.levels.push_back({"ring", LinkKind::kRing, 6, 100e9, 1e-6, 1.0, {}, {}});
  for (const Topology* t : {&torus, &ring}) {
    const int level = t->num_levels() - 1;
    for (int64_t a = 0; a < t->num_gpus(); ++a) {
      for (int64_t b = 0; b < t->num_gpus(); ++b) {
        if (t->LevelOf(a, b) != level) continue;
        int64_t n = 0;
        t->ForEachHop(level, a, b, [&](int64_t, int, bool) { ++n; });
        EXPECT_EQ(n, t->Hops(level, a, b)) << t->name << " " << a << " -> " << b;
        EXPECT_DOUBLE_EQ(t->RouteLatencySeconds(level, a, b), 1e-6 * static_cast<double>(n));
      }
    }
  }
}

TEST(TorusRoutes, TwoHopRouteAlonePaysTwoLatenciesAndOneTransferTime) {
  // GPU 0 (0,0) to GPU 2 (2,0): 2 hops, each link at 100 bytes/ns: 2 x 2000 + 1e6/100 = 14000 ns.
  // (Charging hops x bytes on the endpoints, as before, gave 2000 + 2e6/100 = 22000 ns.)
  Schedule s = Empty(16);
  Transfer(s, 0, 2, 1'000'000);
  auto r = Simulate(s, Torus4x4(), Identity(16), DType::kBf16);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_DOUBLE_EQ(r->total_s, 14e-6);
  EXPECT_DOUBLE_EQ(r->levels[0].busiest_link_bytes, 1e6);
}

TEST(TorusRoutes, FlowsCrossingAtARouterOnDisjointLinksDoNotSlowEachOther) {
  // A: GPU 4 (0,1) -> GPU 6 (2,1) over links 4->5 and 5->6 (dimension 0).
  // B: GPU 1 (1,0) -> GPU 9 (1,2) over links 1->5 and 5->9 (dimension 1).
  // Both pass GPU 5's router but share no link: each takes 2 x 2000 + 1e6/100 = 14000 ns.
  Schedule s = Empty(16);
  Transfer(s, 4, 6, 1'000'000);
  Transfer(s, 1, 9, 1'000'000);
  auto r = Simulate(s, Torus4x4(), Identity(16), DType::kBf16);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_DOUBLE_EQ(r->total_s, 14e-6);
  EXPECT_DOUBLE_EQ(r->levels[0].busiest_link_bytes, 1e6);
}

TEST(TorusRoutes, FlowsSharingTheirMiddleLinkShareItsBandwidth) {
  // A: GPU 0 -> GPU 2 over links 0->1, 1->2; B: GPU 1 -> GPU 3 over links 1->2, 2->3 (the tie
  // of 2 hops either way goes upwards). Link 1->2 carries both: 50 bytes/ns each, so both end at
  // 2 x 2000 + 1e6/50 = 24000 ns. That link carried 2e6 bytes in 24000 ns of 100 bytes/ns:
  // utilisation 2e6 / 2.4e6 = 5/6.
  Schedule s = Empty(16);
  Transfer(s, 0, 2, 1'000'000);
  Transfer(s, 1, 3, 1'000'000);
  auto r = Simulate(s, Torus4x4(), Identity(16), DType::kBf16);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_DOUBLE_EQ(r->total_s, 24e-6);
  EXPECT_EQ(r->levels[0].busiest_link, "unit 1 -> 2 (dimension 0)");
  EXPECT_DOUBLE_EQ(r->levels[0].busiest_link_bytes, 2e6);
  EXPECT_NEAR(r->levels[0].busiest_link_utilization, 5.0 / 6.0, 1e-12);
}

TEST(TorusRoutes, ARingOfNodesHasLinksOfTheNodesBandwidth) {
  // 4 nodes of 2 GPUs on a ring (100 bytes/ns per GPU, so 200 bytes/ns per node link, 2 us per
  // hop). GPUs 0, 1 (node 0) send to GPUs 4, 5 (node 2) over node links 0->1, 1->2; GPUs 2, 3
  // (node 1) send to GPUs 6, 7 (node 3) over 1->2, 2->3. Link 1->2 carries all four flows:
  // 200/4 = 50 bytes/ns each (below every GPU's 100), so all end at 2 x 2000 + 1e6/50 = 24000 ns.
  Topology t = Base();
  t.levels.push_back({"node", LinkKind::kSwitch, 2, 100e9, 1e-6, 1.0, {}, {}});
  t.levels.push_back({"ring", LinkKind::kRing, 4, 100e9, 2e-6, 1.0, {}, {}});
  Schedule s = Empty(8);
  Transfer(s, 0, 4, 1'000'000);
  Transfer(s, 1, 5, 1'000'000);
  Transfer(s, 2, 6, 1'000'000);
  Transfer(s, 3, 7, 1'000'000);
  auto r = Simulate(s, t, Identity(8), DType::kBf16);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_DOUBLE_EQ(r->total_s, 24e-6);
  EXPECT_EQ(r->levels[1].busiest_link, "unit 1 -> 2 (dimension 0)");
  EXPECT_DOUBLE_EQ(r->levels[1].busiest_link_bytes, 4e6);
  EXPECT_TRUE(r->levels[0].busiest_link.empty());  // a switch level has no neighbour links
}

TEST(Oversubscription, ARingShiftOnAPcieServerCrossesEachSocketLinkWithOneFlow) {
  // 2 sockets of 4 GPUs at 24 bytes/ns; the sockets' link 16 bytes/ns: oversubscription 4 x 24 /
  // 16 = 6 (topologies/README.md, "PCIe nodes"). A ring shift, every GPU to g - 1: 0 -> 7 and
  // 4 -> 3 cross, one flow on each socket's uplink and downlink: 1e6 / 16 = 62500 ns; the six
  // others stay in their socket at 24: 41667 ns. The planner charges the same (comm_model_test).
  Topology t = Base();
  t.levels.push_back({"pcie", LinkKind::kSwitch, 4, 24e9, 0.0, 1.0, {}, {}});
  t.levels.push_back({"socket", LinkKind::kFatTree, 2, 24e9, 0.0, 6.0, {}, {}});
  ASSERT_TRUE(t.Validate().ok());
  Schedule s = Empty(8);
  for (int g = 0; g < 8; ++g) Transfer(s, g, (g + 7) % 8, 1'000'000);
  auto r = Simulate(s, t, Identity(8), DType::kBf16);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_NEAR(r->total_s, 1e6 / 16e9, 1e-12);
  // Pairs g -> g + 4 for all g at once: four flows share each socket's 16 bytes/ns: 250000 ns.
  Schedule pairs = Empty(8);
  for (int g = 0; g < 8; ++g) Transfer(pairs, g, (g + 4) % 8, 1'000'000);
  auto all = Simulate(pairs, t, Identity(8), DType::kBf16);
  ASSERT_TRUE(all.ok()) << all.status().message();
  EXPECT_NEAR(all->total_s, 1e6 / 4e9, 1e-12);
}

// 8 GPUs on a full mesh (an MI300X node's xGMI): a 48 bytes/ns link per GPU pair and direction,
// no latency; each GPU's port is its 7 links together (336 bytes/ns).
Topology FullMesh8() {
  Topology t = Base();
  t.levels.push_back({"xgmi", LinkKind::kFullMesh, 8, 48e9, 0.0, 1.0, {}, {}});
  return t;
}

TEST(FullMesh, SendsToDifferentPeersTakeDifferentLinks) {
  // GPUs 1, 2 and 3 send 1e6 bytes to GPU 0 at once: three links, 1e6 / 48 = 20833.3 ns each
  // (the replay's clock is integer nanoseconds and a flow's end rounds up: 20834 ns), together
  // 144 bytes/ns of GPU 0's 336. Behind a switch of 48 bytes/ns ports they would share GPU 0's
  // port: 3 x that time.
  Schedule s = Empty(8);
  for (int32_t from : {1, 2, 3}) Transfer(s, from, 0, 1'000'000);
  auto r = Simulate(s, FullMesh8(), Identity(8), DType::kBf16);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_DOUBLE_EQ(r->total_s, 20834e-9);
  EXPECT_DOUBLE_EQ(r->levels[0].busiest_link_bytes, 1e6);
  // The three links carried 1e6 bytes each; ties go to the lowest link, GPU 1's to GPU 0.
  EXPECT_EQ(r->levels[0].busiest_link, "gpu 1 -> 0");
  // GPUs 4 and 5 send to each other at once: a link per direction, 20834 ns, not twice that.
  Schedule both_ways = Empty(8);
  both_ways.ranks[4].Add(testing::Send(5, 1'000'000));
  both_ways.ranks[5].Add(testing::Send(4, 1'000'000));
  both_ways.ranks[4].Add(testing::Recv(5, 1'000'000));
  both_ways.ranks[5].Add(testing::Recv(4, 1'000'000));
  auto two = Simulate(both_ways, FullMesh8(), Identity(8), DType::kBf16);
  ASSERT_TRUE(two.ok()) << two.status().message();
  EXPECT_DOUBLE_EQ(two->total_s, 20834e-9);
}

TEST(FullMesh, AnAllGatherStepIsSpreadOverTheLinksToEveryMember) {
  // A ring all-gather of 1e6 bytes a member over the 8 GPUs: the replay sends each step to the
  // ring successor, carrying the 1/7 of it that the successor's link takes (the other 6/7 cross
  // the sender's other links on RCCL's other rings, comm_model.h RingCollectiveSpreadOf): each
  // step 1e6 / 7 / 48 = 2976.2 ns (2977 on the replay's integer clock), 7 steps one after
  // another: 7 x 2977 = 20839 ns, the planner's 1e6 / 48 ns (comm_model_test, CommModelFullMesh)
  // but for the rounding. One link per step would take 7 x 20834 ns.
  const Schedule s = testing::AllGatherSchedule(8, 1'000'000);
  auto r = Simulate(s, FullMesh8(), Identity(8), DType::kBf16);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_DOUBLE_EQ(r->total_s, 7 * 2977e-9);
}

TEST(MixedFabrics, AFlowRunsAtItsSlowerEndsPortAndLatency) {
  // 2 nodes of 2 GPUs, 100 bytes/ns NVLink (1 us); the network 50 bytes/ns, 5 us, but node 1 on a
  // 25 bytes/ns, 8 us fabric. GPU 0 -> GPU 2 (node 0 to node 1): 8000 + 1e6/25 = 48000 ns.
  // GPU 1 -> GPU 0 inside node 0 is untouched: 1000 + 1e6/100 = 11000 ns.
  Topology t = Base();
  t.levels.push_back({"node", LinkKind::kSwitch, 2, 100e9, 1e-6, 1.0, {}, {}});
  t.levels.push_back({"net", LinkKind::kFatTree, 2, 50e9, 5e-6, 1.0, {}, {}});
  t.levels[1].fabrics.push_back({"roce", {{1, 1}}, 25e9, 8e-6});
  ASSERT_TRUE(t.Validate().ok());
  Schedule s = Empty(4);
  Transfer(s, 0, 2, 1'000'000);
  auto r = Simulate(s, t, Identity(4), DType::kBf16);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_DOUBLE_EQ(r->total_s, 48e-6);
  Schedule inside = Empty(4);
  Transfer(inside, 1, 0, 1'000'000);
  auto in_node = Simulate(inside, t, Identity(4), DType::kBf16);
  ASSERT_TRUE(in_node.ok());
  EXPECT_DOUBLE_EQ(in_node->total_s, 11e-6);
  // Utilisation counts every GPU's own port: 1e6 bytes over (2 x 50 + 2 x 25) bytes/ns x 48000 ns.
  EXPECT_NEAR(r->levels[1].utilization, 1e6 / (150.0 * 48000), 1e-12);
}

TEST(MixedFabrics, OversubscribedUplinksAreTheirNodesFabrics) {
  // The same cluster with a 2:1 network: node 1's uplink is 2 GPUs x 25 / 2 = 25 bytes/ns, shared
  // by its two GPUs' flows out: GPUs 2 and 3 -> GPUs 0 and 1 at 12.5 bytes/ns each (their ports
  // allow 25): 8000 + 1e6/12.5 = 88000 ns.
  Topology t = Base();
  t.levels.push_back({"node", LinkKind::kSwitch, 2, 100e9, 1e-6, 1.0, {}, {}});
  t.levels.push_back({"net", LinkKind::kFatTree, 2, 50e9, 5e-6, 2.0, {}, {}});
  t.levels[1].fabrics.push_back({"roce", {{1, 1}}, 25e9, 8e-6});
  Schedule s = Empty(4);
  Transfer(s, 2, 0, 1'000'000);
  Transfer(s, 3, 1, 1'000'000);
  auto r = Simulate(s, t, Identity(4), DType::kBf16);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_DOUBLE_EQ(r->total_s, 88e-6);
}

TEST(MixedFabrics, ARingAllGatherFeedsASlowNodeItsChunksOneAtATime) {
  // 4 nodes of 1 GPU, a 100 bytes/ns network with no latency; node 3 on a 25 bytes/ns fabric. A
  // ring all-gather of 1e6 bytes per member (member m sends to m + 1): hops 2 -> 3 and 3 -> 0
  // take 1e6/25 = 40000 ns, the others 10000 ns. Each member forwards its chunks one at a time in
  // step order (NCCL's ring on a channel):
  //   member 1: step 0 [0, 10000], step 1 [10000, 20000] (member 0's chunk arrived at 10000);
  //   member 2: step 0 [0, 40000], step 1 [40000, 80000], step 2 [80000, 120000] (its port is
  //             busy: the chunks of 10000 and 20000 wait their turn);
  //   member 3: step 0 [0, 40000], steps 1 and 2 as its chunks arrive: [40000, 80000],
  //             [80000, 120000];
  //   member 0: forwards at 40000 and 80000, 10000 each.
  // The last chunk arrives at 120000 ns: three slow hops, as the planner charges a ring collective
  // ((p - 1) x its slowest step). Had member 2 sent its three chunks at once, sharing its port,
  // all would reach member 3 together near 120000 ns and member 3's forwards would follow:
  // 160000 ns or more.
  Topology t = Base();
  t.levels.push_back({"gpu", LinkKind::kSwitch, 1, 100e9, 0, 1.0, {}, {}});
  t.levels.push_back({"net", LinkKind::kFatTree, 4, 100e9, 0, 1.0, {}, {}});
  t.levels[1].fabrics.push_back({"slow", {{3, 3}}, 25e9, 0});
  ASSERT_TRUE(t.Validate().ok());
  const Schedule s = testing::AllGatherSchedule(4, 1'000'000);
  auto r = Simulate(s, t, Identity(4), DType::kBf16);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_DOUBLE_EQ(r->total_s, 120e-6);
  EXPECT_EQ(r->flows, 4 * 3);
}

}  // namespace
}  // namespace meshplan::sim
