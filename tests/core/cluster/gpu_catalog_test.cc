// The GPU catalog (core/cluster/gpu_catalog.h): shipped entries compiled in from
// topologies/gpus/, cluster files that name one (by name or path) with their own keys laid over
// it, errors that name the file at fault, and the promise of issue 46: a cluster written with
// `topo new --gpu` or by hand with `gpu = NAME` is the shipped cluster, so it predicts alike.
#include "core/cluster/gpu_catalog.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "core/cluster/cluster_template.h"
#include "core/cluster/topology_toml.h"

namespace meshplan {
namespace {

namespace fs = std::filesystem;

const fs::path kTopologies = fs::path(MESHPLAN_SOURCE_DIR) / "topologies";

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// One switch level of 8 GPUs: what a cluster file needs beside its GPU.
constexpr const char* kLevel = R"([[level]]
name = "nvlink"
kind = "switch"
group_size = 8
bandwidth_GBps = 450
latency_us = 0.94
)";

// The topology written back as TOML from its [gpu] line on: the whole model of the cluster
// without its name, description and source (which differ between files of one cluster).
std::string ModelText(const Topology& t) {
  const std::string text = TopologyToToml(t);
  return text.substr(text.find("[gpu]"));
}

class GpuCatalog : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("meshplan_gpu_catalog_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path Write(const std::string& name, const std::string& text) {
    const fs::path path = dir_ / name;
    std::ofstream(path) << text;
    return path;
  }
  fs::path dir_;
};

TEST(GpuCatalogEntries, AreTheFilesOfTopologiesGpusSorted) {
  // The compiled-in names are the directory's *.toml stems, read here with std::filesystem.
  std::vector<std::string> stems;
  for (const auto& e : fs::directory_iterator(kTopologies / "gpus")) {
    if (e.path().extension() == ".toml") stems.push_back(e.path().stem().string());
  }
  std::sort(stems.begin(), stems.end());
  std::vector<std::string> names;
  for (const ShippedGpu& gpu : ShippedGpus()) {
    names.emplace_back(gpu.name);
    EXPECT_EQ(gpu.toml, ReadFile(kTopologies / "gpus" / (std::string(gpu.name) + ".toml")))
        << gpu.name << ": the compiled-in text is stale (re-run cmake)";
  }
  EXPECT_EQ(names, stems);
  EXPECT_GE(names.size(), 5u);
}

TEST(GpuCatalogEntries, EachLoadsAloneAndStatesTheSourceOfEveryModelTerm) {
  // Every per-library table names its source, and every model term in the file has a comment
  // right above it or on its line (the data it was fitted on, measured from, or derived from).
  const std::regex term(
      R"(^\s*(ring_step_partial_passes|cut_row_extra_pairs|pair_overhead_flops|sliced_merge_passes|backward_rate_ratio|efficiency|attention_efficiency)\s*=)");
  for (const ShippedGpu& gpu : ShippedGpus()) {
    const std::string cluster =
        "name = \"x\"\ngpu = \"" + std::string(gpu.name) + "\"\n" + std::string(kLevel);
    auto t = ParseTopologyToml(cluster, "x.toml");
    ASSERT_TRUE(t.ok()) << gpu.name << ": " << t.status().message();
    EXPECT_EQ(t->gpu.catalog, gpu.name);
    for (const auto& [library, curve] : t->gpu.attention_kernels) {
      if (library == t->gpu.attention_kernel && t->gpu.attention_kernels.size() == 1) continue;
      EXPECT_FALSE(curve.source.empty()) << gpu.name << ": " << library << " has no source";
    }
    // A term is explained by the comment of its paragraph: the lines back to the last blank line
    // or table header, or its own line, hold a comment.
    std::istringstream lines{std::string(gpu.toml)};
    std::string line;
    bool paragraph_commented = false;
    int line_number = 0;
    while (std::getline(lines, line)) {
      ++line_number;
      const size_t first = line.find_first_not_of(" ");
      if (first == std::string::npos || line[first] == '[') {
        paragraph_commented = false;
        continue;
      }
      if (line[first] == '#') paragraph_commented = true;
      if (std::regex_search(line, term)) {
        EXPECT_TRUE(paragraph_commented || line.find('#') != std::string::npos)
            << gpu.name << ".toml:" << line_number << ": a model term without its source: " << line;
      }
    }
  }
}

TEST(GpuCatalogEntries, EveryShippedClusterOfAGpuNamesItsEntry) {
  // Shipped clusters describe no GPU of their own (except the hypothetical torus, whose GPU is a
  // study's): each names a catalog entry, so the files cannot drift apart.
  int named = 0;
  for (const auto& e : fs::directory_iterator(kTopologies)) {
    if (e.path().extension() != ".toml") continue;
    auto t = LoadTopologyFile(e.path().string());
    ASSERT_TRUE(t.ok()) << t.status().message();
    if (e.path().stem() == "hypothetical-torus-16x16") continue;
    EXPECT_FALSE(t->gpu.catalog.empty()) << e.path();
    named += t->gpu.catalog.empty() ? 0 : 1;
  }
  EXPECT_GE(named, 13);
}

TEST_F(GpuCatalog, AFileNamingTheGpuIsTheShippedClusterExactly) {
  // The same one-node H100 cluster three ways: shipped, `gpu = NAME`, and `topo new`'s output.
  auto shipped = LoadTopologyFile((kTopologies / "dgx-h100-1node.toml").string());
  ASSERT_TRUE(shipped.ok()) << shipped.status().message();
  const std::string levels = std::string(kLevel) +
                             "\n[[level]]\nname = \"ib\"\nkind = \"rail-fat-tree\"\ngroup_size = "
                             "1\nbandwidth_GBps = 50\nlatency_us = 5.0\noversubscription = 1.0\n";
  auto by_hand = ParseTopologyToml("name = \"mine\"\ngpu = \"h100-sxm5\"\n" + levels, "mine.toml");
  ASSERT_TRUE(by_hand.ok()) << by_hand.status().message();
  EXPECT_EQ(ModelText(*by_hand), ModelText(*shipped));

  ClusterTemplate t;
  t.gpu = "h100-sxm5";
  t.nodes = 1;
  t.gpus_per_node = 8;
  t.nic_gbits = 400;
  auto made = MakeCluster(t, *shipped);
  ASSERT_TRUE(made.ok()) << made.status().message();
  const std::string written = TopologyToToml(*made, /*gpu_by_catalog=*/true);
  EXPECT_NE(written.find("[gpu]\ncatalog = \"h100-sxm5\"\n\n"), std::string::npos) << written;
  auto read_back = ParseTopologyToml(written, "new.toml");
  ASSERT_TRUE(read_back.ok()) << read_back.status().message();
  // topo new names its network level "ib" as the shipped file does: every number and name is the
  // shipped file's.
  EXPECT_EQ(ModelText(*read_back), ModelText(*shipped));
}

TEST_F(GpuCatalog, TheShippedPcieServersAreTopoNewsOutput) {
  // l40s-pcie-8gpu and rtx4090-pcie-8gpu are what `topo new --gpu G` writes for one 8-GPU node:
  // every number and name of the GPU and the levels alike.
  for (const char* gpu : {"l40s", "rtx4090"}) {
    const std::string name = std::string(gpu) + "-pcie-8gpu";
    auto shipped = LoadTopologyFile((kTopologies / (name + ".toml")).string());
    ASSERT_TRUE(shipped.ok()) << shipped.status().message();
    ClusterTemplate t;
    t.gpu = gpu;
    t.nodes = 1;
    t.name = name;
    auto made = MakeCluster(t, *shipped);
    ASSERT_TRUE(made.ok()) << made.status().message();
    auto read_back = ParseTopologyToml(TopologyToToml(*made, /*gpu_by_catalog=*/true), "new.toml");
    ASSERT_TRUE(read_back.ok()) << read_back.status().message();
    EXPECT_EQ(ModelText(*read_back), ModelText(*shipped)) << gpu;
  }
}

TEST_F(GpuCatalog, TheShippedMi300xNodeIsTopoNewsOutput) {
  // mi300x-8gpu is what `topo new --gpu mi300x` writes for one node: the catalog entry and the
  // xGMI full mesh (a link of 48 GB/s per GPU pair) with the ib level beside it.
  auto shipped = LoadTopologyFile((kTopologies / "mi300x-8gpu.toml").string());
  ASSERT_TRUE(shipped.ok()) << shipped.status().message();
  EXPECT_EQ(shipped->gpu.catalog, "mi300x");
  EXPECT_EQ(shipped->levels[0].kind, LinkKind::kFullMesh);
  EXPECT_DOUBLE_EQ(shipped->PortBandwidth(0, 0), 7 * 48e9);
  ClusterTemplate t;
  t.gpu = "mi300x";
  t.nodes = 1;
  t.name = "mi300x-8gpu";
  auto made = MakeCluster(t, *shipped);
  ASSERT_TRUE(made.ok()) << made.status().message();
  auto read_back = ParseTopologyToml(TopologyToToml(*made, /*gpu_by_catalog=*/true), "new.toml");
  ASSERT_TRUE(read_back.ok()) << read_back.status().message();
  EXPECT_EQ(ModelText(*read_back), ModelText(*shipped));
}

TEST_F(GpuCatalog, KeysUnderTheCatalogOverrideItsOwnKeyByKey) {
  // memory_GB replaced; in [gpu.attention_kernels.fa2] only ring_step_partial_passes changes, the
  // curve, cut and head-dim terms stay the entry's (fa2 on H100: 537 cut pairs, k = 86).
  auto t = ParseTopologyToml(
      "name = \"x\"\n[gpu]\ncatalog = \"h100-sxm5\"\nmemory_GB = 94\n"
      "[gpu.attention_kernels.fa2]\nring_step_partial_passes = 3\n" +
          std::string(kLevel),
      "x.toml");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_DOUBLE_EQ(t->gpu.memory_bytes, 94e9);
  EXPECT_DOUBLE_EQ(t->gpu.hbm_bytes_per_s, 3350e9);
  const AttentionKernelCurve& fa2 = t->gpu.attention_kernels.at("fa2");
  EXPECT_DOUBLE_EQ(fa2.ring_step_partial_passes, 3);
  EXPECT_DOUBLE_EQ(fa2.cut_row_extra_pairs, 537);
  EXPECT_DOUBLE_EQ(fa2.pair_overhead_flops, 86);
  EXPECT_EQ(fa2.efficiency.size(), 3u);
  EXPECT_DOUBLE_EQ(t->gpu.attention_kernels.at("fa3").ring_step_partial_passes, 12);
}

TEST_F(GpuCatalog, APathIsReadFromTheClusterFilesDirectory) {
  fs::create_directories(dir_ / "gpus");
  Write("gpus/mine.toml",
        "name = \"mine\"\n[gpu]\nmodel = \"Mine\"\nmemory_GB = 24\nhbm_GBps = 1000\n"
        "peak_tflops = { bf16 = 165 }\nattention_efficiency = [[1024, 0.5]]\n");
  const fs::path cluster =
      Write("c.toml", "name = \"c\"\n[gpu]\ncatalog = \"gpus/mine.toml\"\n" + std::string(kLevel));
  auto t = LoadTopologyFile(cluster.string());
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->gpu.model, "Mine");
  EXPECT_DOUBLE_EQ(t->gpu.memory_bytes, 24e9);
}

TEST_F(GpuCatalog, ErrorsNameTheFileAtFault) {
  const std::string level(kLevel);
  auto unknown = ParseTopologyToml("name = \"x\"\ngpu = \"h100\"\n" + level, "x.toml");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(
      unknown.status().message().rfind("x.toml: gpu.catalog: unknown GPU 'h100' (shipped: ", 0), 0u)
      << unknown.status().message();
  EXPECT_NE(unknown.status().message().find("h100-sxm5"), std::string::npos);

  const fs::path missing =
      Write("m.toml", "name = \"m\"\n[gpu]\ncatalog = \"nothere.toml\"\n" + level);
  auto no_file = LoadTopologyFile(missing.string());
  ASSERT_FALSE(no_file.ok());
  EXPECT_NE(no_file.status().message().find("m.toml: gpu.catalog: "), std::string::npos);
  EXPECT_NE(no_file.status().message().find("nothere.toml: cannot open file"), std::string::npos)
      << no_file.status().message();

  // A bad value or key inside the entry is the entry's error, not the cluster file's.
  Write("bad.toml",
        "name = \"bad\"\n[gpu]\nmodel = \"B\"\nmemory_GB = -1\nhbm_GBps = 1000\n"
        "peak_tflops = { bf16 = 100 }\nattention_efficiency = [[1024, 0.5]]\n");
  const fs::path uses_bad =
      Write("u.toml", "name = \"u\"\n[gpu]\ncatalog = \"bad.toml\"\n" + level);
  auto bad = LoadTopologyFile(uses_bad.string());
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            (dir_ / "bad.toml").string() + ": gpu.memory_GB: must be positive");

  Write("typo.toml",
        "name = \"t\"\n[gpu]\nmodel = \"T\"\nmemry_GB = 1\nhbm_GBps = 1000\n"
        "peak_tflops = { bf16 = 100 }\nattention_efficiency = [[1024, 0.5]]\n");
  auto typo = LoadTopologyFile(
      Write("v.toml", "name = \"v\"\n[gpu]\ncatalog = \"typo.toml\"\n" + level).string());
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.status().message().find("typo.toml: unknown key 'gpu.memry_GB' (did you mean "
                                         "'memory_GB'?)"),
            std::string::npos)
      << typo.status().message();

  Write("chain.toml", "name = \"c\"\n[gpu]\ncatalog = \"h100-sxm5\"\n");
  auto chain = LoadTopologyFile(
      Write("w.toml", "name = \"w\"\n[gpu]\ncatalog = \"chain.toml\"\n" + level).string());
  ASSERT_FALSE(chain.ok());
  EXPECT_NE(chain.status().message().find("chain.toml: gpu.catalog: a GPU catalog entry cannot "
                                          "name another"),
            std::string::npos)
      << chain.status().message();

  auto wrong_type = ParseTopologyToml("name = \"x\"\n[gpu]\ncatalog = 3\n" + level, "x.toml");
  ASSERT_FALSE(wrong_type.ok());
  EXPECT_EQ(wrong_type.status().message(), "x.toml: gpu.catalog: expected a string, got integer");
}

TEST(GpuCatalogNames, NamesAndPaths) {
  EXPECT_TRUE(IsGpuCatalogName("h100-sxm5"));
  EXPECT_FALSE(IsGpuCatalogName("gpus/h100.toml"));
  EXPECT_FALSE(IsGpuCatalogName("h100.toml"));
  EXPECT_EQ(GpuCatalogPath("g.toml", "dir/c.toml"), "dir/g.toml");
  EXPECT_EQ(GpuCatalogPath("g.toml", "c.toml"), "g.toml");
  EXPECT_EQ(GpuCatalogPath("/abs/g.toml", "dir/c.toml"), "/abs/g.toml");
  auto unknown = ShippedGpuToml("nope");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), ErrorCode::kNotFound);
}

}  // namespace
}  // namespace meshplan
