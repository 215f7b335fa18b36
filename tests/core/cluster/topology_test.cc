#include "core/cluster/topology.h"

#include <gtest/gtest.h>

namespace meshplan {
namespace {

// 2 GPUs per board on a switch, 16 boards on a 4 x 4 torus, 2 racks on a ring: 64 GPUs.
Topology Example() {
  Topology t;
  t.name = "example";
  t.gpu.model = "G";
  t.gpu.memory_bytes = 80e9;
  t.gpu.hbm_bytes_per_s = 3e12;
  t.gpu.peak_tflops[DType::kBf16] = 1000;
  t.gpu.attention_efficiency = {{512, 0.3}, {2048, 0.5}, {8192, 0.6}};
  t.levels.push_back({"board", LinkKind::kSwitch, 2, 400e9, 1e-6, 1.0, {}, {}});
  t.levels.push_back({"torus", LinkKind::kTorus, 16, 100e9, 2e-6, 1.0, {4, 4}, {}});
  t.levels.push_back({"ring", LinkKind::kRing, 2, 50e9, 5e-6, 2.0, {}, {}});
  return t;
}

TEST(TopologyTest, SpansAndGpuCount) {
  Topology t = Example();
  ASSERT_TRUE(t.Validate().ok()) << t.Validate().message();
  EXPECT_EQ(t.Span(0), 2);
  EXPECT_EQ(t.Span(1), 32);
  EXPECT_EQ(t.Span(2), 64);
  EXPECT_EQ(t.num_gpus(), 64);
}

TEST(TopologyTest, LevelOf) {
  Topology t = Example();
  EXPECT_EQ(t.LevelOf(5, 5), -1);
  EXPECT_EQ(t.LevelOf(0, 1), 0);    // same board
  EXPECT_EQ(t.LevelOf(1, 2), 1);    // boards 0 and 1
  EXPECT_EQ(t.LevelOf(0, 31), 1);   // boards 0 and 15, same rack
  EXPECT_EQ(t.LevelOf(31, 32), 2);  // racks 0 and 1
}

TEST(TopologyTest, Hops) {
  Topology t = Example();
  EXPECT_EQ(t.Hops(0, 0, 1), 1);  // a switch is one hop
  // Torus units are boards: board b = gpu / 2, coordinates (b % 4, b / 4).
  EXPECT_EQ(t.Hops(1, 0, 2), 1);   // board 1 = (1,0)
  EXPECT_EQ(t.Hops(1, 0, 10), 2);  // board 5 = (1,1)
  EXPECT_EQ(t.Hops(1, 0, 20), 4);  // board 10 = (2,2): 2 + 2
  EXPECT_EQ(t.Hops(1, 0, 30), 2);  // board 15 = (3,3): wraps round, 1 + 1
  EXPECT_EQ(t.Hops(1, 6, 24), 2);  // board 3 = (3,0) vs board 12 = (0,3): 1 + 1
  // The torus position repeats in the second rack: gpu 32 + x sits where gpu x does.
  EXPECT_EQ(t.Hops(1, 32, 52), 4);
  EXPECT_EQ(t.Hops(2, 0, 63), 1);  // a ring of two racks
}

TEST(TopologyTest, RingHopsTakeTheShortWay) {
  Topology t;
  t.levels.push_back({"node", LinkKind::kSwitch, 4, 1e9, 0, 1.0, {}, {}});
  t.levels.push_back({"ring", LinkKind::kRing, 8, 1e9, 0, 1.0, {}, {}});
  EXPECT_EQ(t.Hops(1, 0, 4), 1);   // nodes 0 -> 1
  EXPECT_EQ(t.Hops(1, 0, 12), 3);  // nodes 0 -> 3
  EXPECT_EQ(t.Hops(1, 0, 16), 4);  // nodes 0 -> 4: opposite side
  EXPECT_EQ(t.Hops(1, 0, 28), 1);  // nodes 0 -> 7: one step backwards
  EXPECT_EQ(t.Hops(1, 0, 1), 1);   // same node: clamped to 1
}

TEST(TopologyTest, EfficiencyInterpolatesInLog2AndClamps) {
  Topology t = Example();
  const GpuSpec& g = t.gpu;
  EXPECT_DOUBLE_EQ(g.Efficiency(64), 0.3);  // below the first point
  EXPECT_DOUBLE_EQ(g.Efficiency(512), 0.3);
  EXPECT_DOUBLE_EQ(g.Efficiency(1024), 0.4);  // halfway in log2 between 512 and 2048
  EXPECT_DOUBLE_EQ(g.Efficiency(2048), 0.5);
  EXPECT_DOUBLE_EQ(g.Efficiency(4096), 0.55);  // halfway between 2048 and 8192
  EXPECT_DOUBLE_EQ(g.Efficiency(8192), 0.6);
  EXPECT_DOUBLE_EQ(g.Efficiency(1 << 20), 0.6);  // above the last point
  EXPECT_DOUBLE_EQ(g.PeakFlopsPerSecond(DType::kBf16), 1000e12);
  EXPECT_DOUBLE_EQ(g.PeakFlopsPerSecond(DType::kFp8), 0.0);  // absent dtype
}

TEST(TopologyTest, LinkKindNames) {
  for (LinkKind k : {LinkKind::kSwitch, LinkKind::kRailFatTree, LinkKind::kFatTree, LinkKind::kRing,
                     LinkKind::kTorus, LinkKind::kFullMesh}) {
    EXPECT_EQ(*ParseLinkKind(LinkKindName(k)), k);
  }
  EXPECT_EQ(LinkKindName(LinkKind::kFullMesh), "full-mesh");
  EXPECT_FALSE(ParseLinkKind("mesh").ok());
}

TEST(TopologyTest, AFullMeshGpusPortIsItsLinksAndAPairOneLink) {
  // 8 GPUs joined pairwise at 48 GB/s a link (an MI300X node): a GPU's port is its 7 links, 336
  // GB/s; two GPUs talk over their one link, 48 GB/s, in one hop.
  Topology t = Example();
  t.levels[0] = {"xgmi", LinkKind::kFullMesh, 8, 48e9, 3e-6, 1.0, {}, {}};
  t.levels[1] = {"torus", LinkKind::kTorus, 4, 100e9, 2e-6, 1.0, {2, 2}, {}};
  ASSERT_TRUE(t.Validate().ok()) << t.Validate().message();
  EXPECT_TRUE(t.IsFullMesh(0));
  EXPECT_FALSE(t.IsFullMesh(1));
  EXPECT_DOUBLE_EQ(t.PortBandwidth(0, 3), 7 * 48e9);
  EXPECT_DOUBLE_EQ(t.PairBandwidth(0, 3, 5), 48e9);
  EXPECT_EQ(t.Hops(0, 3, 5), 1);
  EXPECT_DOUBLE_EQ(t.RouteLatencySeconds(0, 3, 5), 3e-6);
  EXPECT_FALSE(t.HasHopRoutes(0));
}

TEST(TopologyTest, AFullMeshIsTheInnermostLevelWithItsOwnLinksOnly) {
  Topology t = Example();
  t.levels[1].kind = LinkKind::kFullMesh;
  t.levels[1].torus_dims.clear();
  EXPECT_EQ(t.Validate().message().rfind("level[1].kind: a full-mesh level joins GPUs pairwise", 0),
            0u)
      << t.Validate().message();
  Topology over = Example();
  over.levels[0].kind = LinkKind::kFullMesh;
  over.levels[0].oversubscription = 2;
  EXPECT_EQ(over.Validate().message().rfind("level[0].oversubscription: a full-mesh level", 0), 0u)
      << over.Validate().message();
  Topology mixed = Example();
  mixed.levels[0].kind = LinkKind::kFullMesh;
  mixed.levels[0].fabrics.push_back({"slow", {{1, 1}}, 10e9, 1e-6});
  EXPECT_EQ(mixed.Validate().message().rfind("level[0].fabric: a full-mesh level's links", 0), 0u)
      << mixed.Validate().message();
}

// Each broken topology and the start of the message Validate gives.
TEST(TopologyTest, ValidateErrorsNameTheKey) {
  struct Case {
    void (*breakit)(Topology*);
    const char* prefix;
  };
  const Case cases[] = {
      {[](Topology* t) { t->gpu.model = ""; }, "gpu.model:"},
      {[](Topology* t) { t->gpu.memory_bytes = 0; }, "gpu.memory_GB:"},
      {[](Topology* t) { t->gpu.hbm_bytes_per_s = -1; }, "gpu.hbm_GBps:"},
      {[](Topology* t) { t->gpu.launch_overhead_s = -1e-6; }, "gpu.launch_overhead_us:"},
      {[](Topology* t) { t->gpu.peak_tflops.clear(); }, "gpu.peak_tflops:"},
      {[](Topology* t) { t->gpu.peak_tflops[DType::kFp8] = 0; }, "gpu.peak_tflops.fp8:"},
      {[](Topology* t) { t->gpu.attention_efficiency.clear(); }, "gpu.attention_efficiency:"},
      {[](Topology* t) { t->gpu.attention_efficiency[1].block_tokens = 512; },
       "gpu.attention_efficiency[1]: block_tokens must increase"},
      {[](Topology* t) { t->gpu.attention_efficiency[2].efficiency = 1.5; },
       "gpu.attention_efficiency[2]:"},
      {[](Topology* t) { t->levels.clear(); }, "level:"},
      {[](Topology* t) { t->levels[1].group_size = 0; }, "level[1].group_size: must be at least 1"},
      {[](Topology* t) { t->levels[2].name = "board"; }, "level[2].name:"},
      {[](Topology* t) { t->levels[0].bandwidth_bytes_per_s = 0; }, "level[0].bandwidth_GBps:"},
      {[](Topology* t) { t->levels[0].latency_s = -1; }, "level[0].latency_us:"},
      {[](Topology* t) { t->levels[2].oversubscription = 0.5; }, "level[2].oversubscription:"},
      {[](Topology* t) {
         t->levels[1].torus_dims = {4, 3};
       },
       "level[1].dims: product 12"},
      {[](Topology* t) { t->levels[1].torus_dims.clear(); }, "level[1].dims:"},
      {[](Topology* t) { t->levels[0].torus_dims = {2}; }, "level[0].dims: only a torus"},
  };
  for (const Case& c : cases) {
    Topology t = Example();
    c.breakit(&t);
    Status s = t.Validate();
    ASSERT_FALSE(s.ok()) << c.prefix;
    EXPECT_EQ(s.message().rfind(c.prefix, 0), 0u) << "got: " << s.message();
  }
}

}  // namespace
}  // namespace meshplan

namespace meshplan {
namespace {

TEST(TopologyNotes, GbPerSecondWrittenAsGBPerSecondIsSaid) {
  // A 400 Gb/s NIC written as bandwidth_GBps = 400: 8x too fast, beyond any 800 Gb/s NIC (100
  // GB/s). NVLink 4's 450 GB/s and a 50 GB/s NIC are real.
  Topology t;
  t.gpu.model = "G";
  t.levels.push_back({"nvlink", LinkKind::kSwitch, 8, 450e9, 1e-6, 1.0, {}, {}});
  t.levels.push_back({"ib", LinkKind::kFatTree, 4, 50e9, 5e-6, 1.0, {}, {}});
  EXPECT_TRUE(t.PlausibilityNotes().empty());
  t.levels[1].bandwidth_bytes_per_s = 400e9;
  ASSERT_EQ(t.PlausibilityNotes().size(), 1u);
  EXPECT_NE(t.PlausibilityNotes()[0].find("level 'ib': 400 GB/s per GPU per direction is faster "
                                          "than an 800 Gb/s NIC"),
            std::string::npos);
  t.levels[0].bandwidth_bytes_per_s = 2000e9;  // beyond NVLink 5's 900 GB/s per direction
  EXPECT_EQ(t.PlausibilityNotes().size(), 2u);
  t.gpu.ranks_per_device = 4;  // a calibrated CPU: its levels are memory copies
  EXPECT_TRUE(t.PlausibilityNotes().empty());
}

}  // namespace
}  // namespace meshplan
