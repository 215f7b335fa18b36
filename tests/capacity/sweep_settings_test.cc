// Sweep settings: layers stack key by key, and MakeSweepSpec fills what no layer sets with the
// documented defaults.
#include "capacity/sweep_settings.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/cluster/topology_toml.h"
#include "planner/schemes/registry.h"

namespace meshplan::capacity {
namespace {

TEST(SweepSettings, OverlayReplacesOnlyWhatTheTopLayerSets) {
  SweepSettings file;
  file.gpus = std::vector<int64_t>{8, 16};
  file.seq_lens = std::vector<int64_t>{4096};
  file.workload.q_heads = 32;
  file.workload.kv_heads = 8;
  file.simulate = true;
  SweepSettings flags;
  flags.gpus = std::vector<int64_t>{64};
  flags.workload.kv_heads = 4;
  file.Overlay(flags);
  EXPECT_EQ(file.gpus, (std::vector<int64_t>{64}));
  EXPECT_EQ(file.seq_lens, (std::vector<int64_t>{4096}));
  EXPECT_EQ(file.workload.q_heads, 32);
  EXPECT_EQ(file.workload.kv_heads, 4);
  EXPECT_EQ(file.simulate, true);
  EXPECT_FALSE(file.schemes.has_value());
}

TEST(MakeSweepSpec, DefaultsForWhatNoLayerSets) {
  auto spec = MakeSweepSpec(SweepSettings{});
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  ASSERT_EQ(spec->topologies.size(), 1u);
  EXPECT_EQ(spec->topologies[0].name, DefaultTopology().name);
  EXPECT_TRUE(spec->gpus.empty());
  EXPECT_EQ(spec->seq_lens, (std::vector<int64_t>{int64_t{1} << 20}));
  EXPECT_TRUE(spec->schemes.empty());
  EXPECT_EQ(spec->base.Describe(), Workload::Default().Describe());
  EXPECT_EQ(spec->reserved_memory_bytes, 0);
  EXPECT_FALSE(spec->simulate);
}

TEST(MakeSweepSpec, TakesEverySetField) {
  SweepSettings settings;
  settings.topology_files = std::vector<std::string>{std::string(MESHPLAN_SOURCE_DIR) +
                                                     "/topologies/dgx-h100-4node.toml"};
  settings.gpus = std::vector<int64_t>{8, 16};
  settings.seq_lens = std::vector<int64_t>{8192, 4096};
  settings.schemes = std::vector<Scheme>{Scheme("ring")};
  settings.workload.q_heads = 16;
  settings.workload.pass = Pass::kForward;
  settings.reserved_memory_bytes = 1e9;
  settings.simulate = true;
  auto spec = MakeSweepSpec(settings);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  ASSERT_EQ(spec->topologies.size(), 1u);
  EXPECT_EQ(spec->topologies[0].name, "dgx-h100-4node");
  EXPECT_EQ(spec->gpus, (std::vector<int64_t>{8, 16}));
  EXPECT_EQ(spec->seq_lens, (std::vector<int64_t>{8192, 4096}));
  EXPECT_EQ(spec->schemes, (std::vector<Scheme>{Scheme("ring")}));
  EXPECT_EQ(spec->base.q_heads, 16);
  EXPECT_EQ(spec->base.pass, Pass::kForward);
  EXPECT_EQ(spec->base.seq_len, 8192);  // the first length; each point sets its own
  EXPECT_EQ(spec->reserved_memory_bytes, 1e9);
  EXPECT_TRUE(spec->simulate);
}

TEST(MakeSweepSpec, ErrorsForAnInvalidWorkloadThenForTopologyFiles) {
  SweepSettings settings;
  settings.workload.q_heads = 60;  // not a multiple of the 8 KV heads
  settings.topology_files = std::vector<std::string>{"/no/such/cluster.toml"};
  auto bad_workload = MakeSweepSpec(settings);
  ASSERT_FALSE(bad_workload.ok());
  EXPECT_EQ(bad_workload.status().message().rfind("workload: ", 0), 0u)
      << bad_workload.status().message();
  settings.workload.q_heads.reset();
  auto bad_file = MakeSweepSpec(settings);
  ASSERT_FALSE(bad_file.ok());
  EXPECT_NE(bad_file.status().message().find("/no/such/cluster.toml"), std::string::npos)
      << bad_file.status().message();
}

}  // namespace
}  // namespace meshplan::capacity
