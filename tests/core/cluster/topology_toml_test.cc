#include "core/cluster/topology_toml.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "core/base/toml_util.h"

namespace meshplan {
namespace {

namespace fs = std::filesystem;

const fs::path kShippedTopologyDir = fs::path(MESHPLAN_SOURCE_DIR) / "topologies";

std::vector<fs::path> ShippedFiles() {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(kShippedTopologyDir)) {
    if (entry.path().extension() == ".toml") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(ShippedTopologiesTest, EveryFileLoadsValidatesAndRoundTrips) {
  const auto files = ShippedFiles();
  ASSERT_GE(files.size(), 10u);  // the default plus the nine added with it
  for (const fs::path& path : files) {
    auto topo = LoadTopologyFile(path.string());
    ASSERT_TRUE(topo.ok()) << topo.status().message();
    EXPECT_TRUE(topo->Validate().ok()) << path;
    EXPECT_EQ(topo->source, path.string());
    EXPECT_EQ(topo->name, path.stem().string()) << "name should match the file name";
    EXPECT_FALSE(topo->description.empty()) << path;
    // The planner uses bf16 and fp32 (partials): every shipped GPU states both.
    EXPECT_GT(topo->gpu.PeakFlopsPerSecond(DType::kBf16), 0) << path;
    EXPECT_GT(topo->gpu.PeakFlopsPerSecond(DType::kFp32), 0) << path;

    const std::string text = TopologyToToml(*topo);
    auto again = ParseTopologyToml(text, "roundtrip.toml");
    ASSERT_TRUE(again.ok()) << again.status().message() << "\n" << text;
    EXPECT_EQ(TopologyToToml(*again), text);
    EXPECT_EQ(again->name, topo->name);
    EXPECT_EQ(again->gpu.memory_bytes, topo->gpu.memory_bytes);
    EXPECT_EQ(again->gpu.hbm_bytes_per_s, topo->gpu.hbm_bytes_per_s);
    EXPECT_EQ(again->gpu.launch_overhead_s, topo->gpu.launch_overhead_s);
    EXPECT_EQ(again->gpu.peak_tflops, topo->gpu.peak_tflops);
    ASSERT_EQ(again->levels.size(), topo->levels.size());
    for (size_t i = 0; i < topo->levels.size(); ++i) {
      EXPECT_EQ(again->levels[i].bandwidth_bytes_per_s, topo->levels[i].bandwidth_bytes_per_s);
      EXPECT_EQ(again->levels[i].latency_s, topo->levels[i].latency_s);
      EXPECT_EQ(again->levels[i].oversubscription, topo->levels[i].oversubscription);
      EXPECT_EQ(again->levels[i].torus_dims, topo->levels[i].torus_dims);
    }
  }
}

TEST(ShippedTopologiesTest, GpuCountsByHand) {
  struct Expect {
    const char* file;
    int64_t gpus;
  };
  for (const Expect& e :
       {Expect{"dgx-h100-1node.toml", 8}, Expect{"dgx-h100-4node.toml", 32},
        Expect{"dgx-h100-4gpu.toml", 4}, Expect{"dgx-h100-32node.toml", 256},
        Expect{"dgx-h100-128node.toml", 1024}, Expect{"dgx-a100-16node.toml", 128},
        Expect{"hgx-h200-32gpu.toml", 32}, Expect{"gb200-nvl72-4rack.toml", 288},
        Expect{"h100-64node-1gpu.toml", 64}, Expect{"a100-16node-4gpu.toml", 64},
        Expect{"hypothetical-torus-16x16.toml", 256}}) {
    auto topo = LoadTopologyFile((kShippedTopologyDir / e.file).string());
    ASSERT_TRUE(topo.ok()) << topo.status().message();
    EXPECT_EQ(topo->num_gpus(), e.gpus) << e.file;
  }
}

TEST(DefaultTopologyTest, EqualsTheShipped32NodeFile) {
  Topology def = DefaultTopology();
  auto file = LoadTopologyFile((kShippedTopologyDir / "dgx-h100-32node.toml").string());
  ASSERT_TRUE(file.ok()) << file.status().message();
  EXPECT_EQ(TopologyToToml(def), TopologyToToml(*file));
  EXPECT_EQ(def.source, "built-in");
  // Values by hand from the file: 32 nodes x 8 GPUs, 80 GB, NVLink 450 GB/s, 0.94 us, NDR 50 GB/s.
  EXPECT_EQ(def.num_gpus(), 256);
  EXPECT_DOUBLE_EQ(def.gpu.memory_bytes, 80e9);
  EXPECT_DOUBLE_EQ(def.gpu.hbm_bytes_per_s, 3.35e12);
  EXPECT_DOUBLE_EQ(def.gpu.launch_overhead_s, 4e-6);
  EXPECT_DOUBLE_EQ(def.gpu.PeakFlopsPerSecond(DType::kBf16), 989e12);
  ASSERT_EQ(def.levels.size(), 2u);
  EXPECT_EQ(def.levels[0].kind, LinkKind::kSwitch);
  EXPECT_DOUBLE_EQ(def.levels[0].bandwidth_bytes_per_s, 450e9);
  EXPECT_DOUBLE_EQ(def.levels[0].latency_s, 0.94e-6);
  EXPECT_EQ(def.levels[1].kind, LinkKind::kRailFatTree);
  EXPECT_DOUBLE_EQ(def.levels[1].bandwidth_bytes_per_s, 50e9);
  EXPECT_DOUBLE_EQ(def.levels[1].oversubscription, 1.0);
  // The default library is FlashAttention-3, whose curve holds the MagiAttention kernel
  // benchmark's 557.7 TFLOP/s at 1K tokens, 0.564 of 989; cuDNN holds 646 of 989 at 4K.
  EXPECT_EQ(def.gpu.attention_kernel, "fa3");
  EXPECT_DOUBLE_EQ(def.gpu.Efficiency(1024), 0.564);
  EXPECT_DOUBLE_EQ(def.gpu.backward_rate_ratio, 0.84);
  Topology cudnn = def;
  ASSERT_TRUE(cudnn.UseAttentionKernel("cudnn").ok());
  EXPECT_DOUBLE_EQ(cudnn.gpu.Efficiency(4096), 0.653);
  EXPECT_DOUBLE_EQ(cudnn.gpu.backward_rate_ratio, 0.81);
}

// A small valid file; each error test breaks one thing in it.
const char kBase[] = R"(name = "t"
[gpu]
model = "G"
memory_GB = 80
hbm_GBps = 3350.5
peak_tflops = { bf16 = 989, fp32 = 494.5 }
attention_efficiency = [[512, 0.3], [4096, 0.6]]

[[level]]
name = "nvlink"
kind = "switch"
group_size = 8
bandwidth_GBps = 450
latency_us = 1

[[level]]
name = "ib"
kind = "fat-tree"
group_size = 4
bandwidth_GBps = 50
latency_us = 5
)";

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

// Parses `text` as t.toml and expects an InvalidInput error containing every part.
void ExpectError(const std::string& text, std::vector<std::string> parts) {
  auto topo = ParseTopologyToml(text, "t.toml");
  ASSERT_FALSE(topo.ok()) << text;
  const std::string& m = topo.status().message();
  EXPECT_EQ(topo.status().code(), ErrorCode::kInvalidInput) << m;
  EXPECT_EQ(m.rfind("t.toml", 0), 0u) << m;         // names the source first
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;  // one line
  for (const std::string& part : parts)
    EXPECT_NE(m.find(part), std::string::npos) << "'" << part << "' not in: " << m;
}

TEST(TopologyTomlTest, BaseParsesWithDefaults) {
  auto topo = ParseTopologyToml(kBase, "t.toml");
  ASSERT_TRUE(topo.ok()) << topo.status().message();
  EXPECT_EQ(topo->description, "");                  // optional
  EXPECT_EQ(topo->gpu.launch_overhead_s, 0.0);       // optional, default 0
  EXPECT_EQ(topo->levels[1].oversubscription, 1.0);  // optional, default 1
  EXPECT_EQ(topo->gpu.memory_bytes, 80e9);           // integer accepted for a float
  EXPECT_EQ(topo->gpu.hbm_bytes_per_s, 3350.5e9);
  EXPECT_EQ(topo->levels[1].latency_s, 5e-6);
  EXPECT_EQ(topo->num_gpus(), 32);
  EXPECT_EQ(topo->source, "t.toml");
}

// `provenance`: lines of what changed the file, kept in order through a read and a write (quotes
// and backslashes escaped); anything but an array of strings is refused naming the entry.
TEST(TopologyTomlTest, ProvenanceRoundTripsAndIsChecked) {
  auto topo = ParseTopologyToml(
      Replace(kBase, "name = \"t\"",
              "name = \"t\"\nprovenance = [\"first \\\"pass\\\"\", \"second C:\\\\log\"]"),
      "t.toml");
  ASSERT_TRUE(topo.ok()) << topo.status().message();
  ASSERT_EQ(topo->provenance.size(), 2u);
  EXPECT_EQ(topo->provenance[0], "first \"pass\"");
  EXPECT_EQ(topo->provenance[1], "second C:\\log");
  auto again = ParseTopologyToml(TopologyToToml(*topo), "again.toml");
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again->provenance, topo->provenance);
  EXPECT_TRUE(ParseTopologyToml(kBase, "t.toml")->provenance.empty());  // optional
  ExpectError(Replace(kBase, "name = \"t\"", "name = \"t\"\nprovenance = \"one\""),
              {"provenance: expected an array of strings"});
  ExpectError(Replace(kBase, "name = \"t\"", "name = \"t\"\nprovenance = [\"a\", 2]"),
              {"provenance[1]: expected a string, got integer"});
}

TEST(TopologyTomlTest, SyntaxErrorGivesLineAndColumn) {
  ExpectError(Replace(kBase, "group_size = 4", "group_size = = 4"), {"t.toml:19:"});
  ExpectError("name = \"t\"\n[gpu\n", {"t.toml:2:"});
}

TEST(TopologyTomlTest, UnknownKeys) {
  ExpectError(Replace(kBase, "name = \"t\"", "name = \"t\"\ncolour = \"red\""),
              {"unknown key 'colour'"});
  ExpectError(Replace(kBase, "model = \"G\"", "model = \"G\"\nfoo = 1"), {"unknown key 'gpu.foo'"});
  ExpectError(Replace(kBase, "latency_us = 5", "latency_us = 5\nbandwidth_gbps = 1"),
              {"unknown key 'level[1].bandwidth_gbps'"});
  ExpectError(Replace(kBase, "{ bf16 = 989,", "{ int4 = 1, bf16 = 989,"),
              {"gpu.peak_tflops.int4", "unknown dtype"});
  ExpectError(Replace(kBase, "name = \"t\"", "name = \"t\"\n[extra]\nx = 1"),
              {"unknown key 'extra'"});
}

TEST(TopologyTomlTest, WrongTypes) {
  ExpectError(Replace(kBase, "memory_GB = 80", "memory_GB = \"80\""),
              {"gpu.memory_GB: expected a number, got string"});
  ExpectError(Replace(kBase, "group_size = 8", "group_size = 8.0"),
              {"level[0].group_size: expected an integer, got float"});
  ExpectError(Replace(kBase, "name = \"t\"", "name = 5"), {"name: expected a string, got integer"});
  ExpectError(Replace(kBase, "kind = \"switch\"", "kind = true"),
              {"level[0].kind: expected a string, got boolean"});
  ExpectError(Replace(kBase, "[[512, 0.3],", "[[512.5, 0.3],"),
              {"gpu.attention_efficiency[0].block_tokens: expected an integer"});
  ExpectError(Replace(kBase, "[[512, 0.3],", "[[512, 0.3, 1],"),
              {"gpu.attention_efficiency[0]:", "pair"});
  ExpectError(Replace(kBase, "bf16 = 989", "bf16 = \"fast\""),
              {"gpu.peak_tflops.bf16: expected a number"});
  ExpectError(Replace(kBase, "latency_us = 1\n", "latency_us = nan\n"),
              {"level[0].latency_us: must be a finite number"});
  ExpectError(Replace(kBase, "peak_tflops = { bf16 = 989, fp32 = 494.5 }", "peak_tflops = 989"),
              {"gpu.peak_tflops: expected a table"});
}

TEST(TopologyTomlTest, MissingRequiredKeys) {
  ExpectError(Replace(kBase, "memory_GB = 80\n", ""), {"gpu.memory_GB: missing required key"});
  ExpectError(Replace(kBase, "name = \"t\"\n", ""), {"name: missing required key"});
  ExpectError(Replace(kBase, "kind = \"fat-tree\"\n", ""), {"level[1].kind: missing required key"});
  ExpectError(Replace(kBase, "attention_efficiency = [[512, 0.3], [4096, 0.6]]\n", ""),
              {"gpu.attention_efficiency: missing required key"});
  ExpectError("name = \"t\"\n", {"gpu: missing required key"});
  const std::string base(kBase);
  ExpectError(base.substr(0, base.find("[[level]]")), {"level: missing required key"});
}

TEST(TopologyTomlTest, NegativeAndZeroValues) {
  ExpectError(Replace(kBase, "group_size = 4", "group_size = 0"),
              {"level[1].group_size: must be at least 1"});
  ExpectError(Replace(kBase, "group_size = 4", "group_size = -2"),
              {"level[1].group_size: must be at least 1"});
  ExpectError(Replace(kBase, "memory_GB = 80", "memory_GB = -80"),
              {"gpu.memory_GB: must be positive"});
  ExpectError(Replace(kBase, "bandwidth_GBps = 50", "bandwidth_GBps = 0"),
              {"level[1].bandwidth_GBps: must be positive"});
  ExpectError(Replace(kBase, "latency_us = 5", "latency_us = -5"),
              {"level[1].latency_us: must not be negative"});
  ExpectError(Replace(kBase, "latency_us = 5", "latency_us = 5\noversubscription = 0.5"),
              {"level[1].oversubscription: must be >= 1"});
  ExpectError(Replace(kBase, "fp32 = 494.5", "fp32 = 0"),
              {"gpu.peak_tflops.fp32: must be positive"});
  ExpectError(Replace(kBase, "[4096, 0.6]", "[4096, 1.2]"),
              {"gpu.attention_efficiency[1]: efficiency"});
}

TEST(TopologyTomlTest, TorusDims) {
  const std::string torus = Replace(kBase, "kind = \"fat-tree\"", "kind = \"torus\"");
  ExpectError(torus, {"level[1].dims: a torus level needs dims"});
  ExpectError(Replace(torus, "latency_us = 5", "latency_us = 5\ndims = [2, 3]"),
              {"level[1].dims: product 6 differs from group_size 4"});
  ExpectError(Replace(torus, "latency_us = 5", "latency_us = 5\ndims = [2, \"2\"]"),
              {"level[1].dims[1]: expected an integer, got string"});
  ExpectError(Replace(kBase, "latency_us = 5", "latency_us = 5\ndims = [2, 2]"),
              {"level[1].dims: only a torus"});
  auto ok = ParseTopologyToml(Replace(torus, "latency_us = 5", "latency_us = 5\ndims = [2, 2]"),
                              "t.toml");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->levels[1].torus_dims, (std::vector<int64_t>{2, 2}));
}

TEST(TopologyTomlTest, BadKind) {
  ExpectError(Replace(kBase, "kind = \"fat-tree\"", "kind = \"dragonfly\""),
              {"level[1].kind: unknown kind 'dragonfly'"});
}

TEST(TopologyTomlTest, EfficiencyMustIncrease) {
  ExpectError(Replace(kBase, "[[512, 0.3], [4096, 0.6]]", "[[4096, 0.6], [512, 0.3]]"),
              {"gpu.attention_efficiency[1]: block_tokens must increase"});
  ExpectError(Replace(kBase, "[[512, 0.3], [4096, 0.6]]", "[[512, 0.3], [512, 0.6]]"),
              {"gpu.attention_efficiency[1]: block_tokens must increase"});
}

TEST(TopologyTomlTest, DuplicateLevelName) {
  ExpectError(Replace(kBase, "name = \"ib\"", "name = \"nvlink\""),
              {"level[1].name:", "used twice"});
}

TEST(TopologyTomlTest, MissingFileIsNotFound) {
  auto topo = LoadTopologyFile("/nonexistent/missing.toml");
  ASSERT_FALSE(topo.ok());
  EXPECT_EQ(topo.status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(topo.status().message(), "/nonexistent/missing.toml: cannot open file");
}

// A negative zero (allowed where zero is: a latency) is read as 0, so the written file says
// "latency_us = 0" and writes back to the same text; "-0" would read back as the integer 0.
TEST(TopologyTomlTest, NegativeZeroIsWrittenAsZeroAndRoundTrips) {
  auto topo = ParseTopologyToml(Replace(kBase, "latency_us = 5", "latency_us = -0.0"), "t.toml");
  ASSERT_TRUE(topo.ok()) << topo.status().message();
  EXPECT_FALSE(std::signbit(topo->levels[1].latency_s));
  const std::string written = TopologyToToml(*topo);
  EXPECT_EQ(written.find("-0"), std::string::npos) << written;
  auto again = ParseTopologyToml(written, "w.toml");
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(TopologyToToml(*again), written);
}

TEST(TopologyTomlTest, WriterEscapesStrings) {
  auto topo = ParseTopologyToml(kBase, "t.toml");
  ASSERT_TRUE(topo.ok());
  topo->description = "quote \" backslash \\ tab\t newline\n";
  auto again = ParseTopologyToml(TopologyToToml(*topo), "w.toml");
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again->description, topo->description);
}
}  // namespace
}  // namespace meshplan

namespace meshplan {
namespace {

TEST(TopologyTomlTest, DeviceSharingKeysDefaultParseAndRoundTrip) {
  auto plain = ParseTopologyToml(kBase, "t.toml");
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  EXPECT_EQ(plain->gpu.ranks_per_device, 1);
  EXPECT_EQ(plain->gpu.concurrent_kernels, 1);
  EXPECT_EQ(plain->gpu.sharing, DeviceSharing::kProcessor);
  EXPECT_EQ(plain->gpu.backward_rate_ratio, 1.0);
  EXPECT_EQ(TopologyToToml(*plain).find("ranks_per_device"),
            std::string::npos);  // defaults not written

  const std::string text = Replace(kBase, "attention_efficiency = [[512, 0.3], [4096, 0.6]]",
                                   "attention_efficiency = [[512, 0.3], [4096, 0.6]]\n"
                                   "backward_rate_ratio = 1.25\nranks_per_device = 4\n"
                                   "concurrent_kernels = 2\nsharing = \"serial\"");
  auto topo = ParseTopologyToml(text, "t.toml");
  ASSERT_TRUE(topo.ok()) << topo.status().message();
  EXPECT_EQ(topo->gpu.ranks_per_device, 4);
  EXPECT_EQ(topo->gpu.concurrent_kernels, 2);
  EXPECT_EQ(topo->gpu.sharing, DeviceSharing::kSerial);
  EXPECT_EQ(topo->gpu.backward_rate_ratio, 1.25);
  // 4 ranks on a device with 2 kernel slots: the planner's kernels take 4 / 2 = 2x as long, and
  // each rank may use a quarter of the device's 80 GB.
  EXPECT_EQ(topo->gpu.SharedComputeSlowdown(), 2.0);
  EXPECT_EQ(topo->gpu.MemoryPerRankBytes(), 20e9);
  auto again = ParseTopologyToml(TopologyToToml(*topo), "again.toml");
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again->gpu.ranks_per_device, 4);
  EXPECT_EQ(again->gpu.concurrent_kernels, 2);
  EXPECT_EQ(again->gpu.sharing, DeviceSharing::kSerial);
  EXPECT_EQ(again->gpu.backward_rate_ratio, 1.25);
  EXPECT_FALSE(again->gpu.copies_take_compute);  // default: copy engines
  EXPECT_EQ(TopologyToToml(*again).find("copies_take_compute"), std::string::npos);
}

TEST(TopologyTomlTest, CopiesTakeComputeParsesAndRoundTrips) {
  const std::string at = "attention_efficiency = [[512, 0.3], [4096, 0.6]]";
  auto topo = ParseTopologyToml(
      Replace(kBase, at, at + "\nranks_per_device = 4\ncopies_take_compute = true"), "t.toml");
  ASSERT_TRUE(topo.ok()) << topo.status().message();
  EXPECT_TRUE(topo->gpu.copies_take_compute);
  const std::string written = TopologyToToml(*topo);
  EXPECT_NE(written.find("copies_take_compute = true"), std::string::npos) << written;
  auto again = ParseTopologyToml(written, "again.toml");
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_TRUE(again->gpu.copies_take_compute);
  ExpectError(Replace(kBase, at, at + "\ncopies_take_compute = 1"),
              {"gpu.copies_take_compute", "true or false"});
}

// A whole step's kernel fraction: 1 when absent (and not written back), read and written back
// when stated, refused outside (0, 1] with the key named.
TEST(TopologyTomlTest, StepKernelRateFractionParsesRoundTripsAndIsBounded) {
  const std::string at = "attention_efficiency = [[512, 0.3], [4096, 0.6]]";
  auto plain = ParseTopologyToml(kBase, "t.toml");
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  EXPECT_EQ(plain->gpu.step_kernel_rate_fraction, 1.0);
  EXPECT_EQ(TopologyToToml(*plain).find("step_kernel_rate_fraction"), std::string::npos);
  auto topo =
      ParseTopologyToml(Replace(kBase, at, at + "\nstep_kernel_rate_fraction = 0.717"), "t.toml");
  ASSERT_TRUE(topo.ok()) << topo.status().message();
  EXPECT_EQ(topo->gpu.step_kernel_rate_fraction, 0.717);
  auto again = ParseTopologyToml(TopologyToToml(*topo), "again.toml");
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again->gpu.step_kernel_rate_fraction, 0.717);
  for (const char* bad : {"0", "-0.5", "1.5"}) {
    ExpectError(Replace(kBase, at, at + "\nstep_kernel_rate_fraction = " + std::string(bad)),
                {"gpu.step_kernel_rate_fraction", "(0, 1]"});
  }
}

// The last rank's lag on a shared device: microseconds in the file, seconds in the model (16500
// us = 16.5e-3 s), written back only when set, refused below 0 and above 10 s with the key named.
TEST(TopologyTomlTest, SharingEndLagParsesRoundTripsAndIsBounded) {
  const std::string at = "attention_efficiency = [[512, 0.3], [4096, 0.6]]";
  auto plain = ParseTopologyToml(kBase, "t.toml");
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  EXPECT_EQ(plain->gpu.sharing_end_lag_s, 0.0);
  EXPECT_EQ(TopologyToToml(*plain).find("sharing_end_lag_us"), std::string::npos);
  auto topo = ParseTopologyToml(
      Replace(kBase, at, at + "\nranks_per_device = 4\nsharing_end_lag_us = 16500"), "t.toml");
  ASSERT_TRUE(topo.ok()) << topo.status().message();
  EXPECT_DOUBLE_EQ(topo->gpu.sharing_end_lag_s, 16.5e-3);
  const std::string written = TopologyToToml(*topo);
  EXPECT_NE(written.find("sharing_end_lag_us = 16500\n"), std::string::npos) << written;
  auto again = ParseTopologyToml(written, "again.toml");
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_DOUBLE_EQ(again->gpu.sharing_end_lag_s, 16.5e-3);
  ExpectError(Replace(kBase, at, at + "\nsharing_end_lag_us = -1"), {"gpu.sharing_end_lag_us"});
  ExpectError(Replace(kBase, at, at + "\nsharing_end_lag_us = 2e7"),
              {"gpu.sharing_end_lag_us", "10 s"});
  ExpectError(Replace(kBase, at, at + "\nsharing_end_lag_us = \"16 ms\""),
              {"gpu.sharing_end_lag_us"});
}

// The lag's part that grows with the run: a plain fraction, written back only when set, refused
// outside [0, 1] with the key named.
TEST(TopologyTomlTest, SharingEndLagFractionParsesRoundTripsAndIsBounded) {
  const std::string at = "attention_efficiency = [[512, 0.3], [4096, 0.6]]";
  auto plain = ParseTopologyToml(kBase, "t.toml");
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  EXPECT_EQ(plain->gpu.sharing_end_lag_fraction, 0.0);
  EXPECT_EQ(TopologyToToml(*plain).find("sharing_end_lag_fraction"), std::string::npos);
  auto topo = ParseTopologyToml(
      Replace(kBase, at, at + "\nranks_per_device = 4\nsharing_end_lag_fraction = 0.104"),
      "t.toml");
  ASSERT_TRUE(topo.ok()) << topo.status().message();
  EXPECT_DOUBLE_EQ(topo->gpu.sharing_end_lag_fraction, 0.104);
  const std::string written = TopologyToToml(*topo);
  EXPECT_NE(written.find("sharing_end_lag_fraction = 0.104\n"), std::string::npos) << written;
  auto again = ParseTopologyToml(written, "again.toml");
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_DOUBLE_EQ(again->gpu.sharing_end_lag_fraction, 0.104);
  ExpectError(Replace(kBase, at, at + "\nsharing_end_lag_fraction = -0.1"),
              {"gpu.sharing_end_lag_fraction"});
  ExpectError(Replace(kBase, at, at + "\nsharing_end_lag_fraction = 1.5"),
              {"gpu.sharing_end_lag_fraction", "[0, 1]"});
  ExpectError(Replace(kBase, at, at + "\nsharing_end_lag_fraction = \"10%\""),
              {"gpu.sharing_end_lag_fraction"});
}

TEST(TopologyTomlTest, DeviceSharingErrorsNameTheKey) {
  const std::string at = "attention_efficiency = [[512, 0.3], [4096, 0.6]]";
  // level[0] groups 8 GPU slots: 3 ranks per device would straddle two nodes.
  ExpectError(Replace(kBase, at, at + "\nranks_per_device = 3"),
              {"gpu.ranks_per_device", "does not divide"});
  ExpectError(Replace(kBase, at, at + "\nranks_per_device = 0"),
              {"gpu.ranks_per_device", "1..4096"});
  ExpectError(Replace(kBase, at, at + "\nconcurrent_kernels = 0"), {"gpu.concurrent_kernels"});
  ExpectError(Replace(kBase, at, at + "\nsharing = \"fifo\""),
              {"gpu.sharing", "processor or serial"});
  ExpectError(Replace(kBase, at, at + "\nbackward_rate_ratio = 0"), {"gpu.backward_rate_ratio"});
  ExpectError(Replace(kBase, at, at + "\nranks_per_device = 2.0"),
              {"gpu.ranks_per_device", "integer"});
  ExpectError(Replace(kBase, at, at + "\nconcurrent_kernels = 0.5"),
              {"gpu.concurrent_kernels", "[1, 4096]"});
}

// The cost of a mask's cut: cut_row_extra_pairs parses, round-trips, is refused below 0; the
// ratio that calibrate wrote before it (masked_block_rate_ratio) is refused with what to do.
TEST(TopologyTomlTest, CutRowExtraPairsParsesAndTheOldRatioIsRefused) {
  const std::string at = "attention_efficiency = [[512, 0.3], [4096, 0.6]]";
  auto topo = ParseTopologyToml(Replace(kBase, at, at + "\ncut_row_extra_pairs = 52.5"), "t.toml");
  ASSERT_TRUE(topo.ok()) << topo.status().message();
  EXPECT_EQ(topo->gpu.cut_row_extra_pairs, 52.5);
  EXPECT_EQ(ParseTopologyToml(kBase, "t.toml")->gpu.cut_row_extra_pairs,
            0.0);  // default: cuts cost nothing
  auto again = ParseTopologyToml(TopologyToToml(*topo), "again.toml");
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again->gpu.cut_row_extra_pairs, 52.5);
  ExpectError(Replace(kBase, at, at + "\ncut_row_extra_pairs = -1"),
              {"gpu.cut_row_extra_pairs", "[0, 1e6]"});
  ExpectError(Replace(kBase, at, at + "\nmasked_block_rate_ratio = 0.85"),
              {"t.toml: gpu.masked_block_rate_ratio", "cut_row_extra_pairs", "meshplan calibrate"});
}

// Issue 17: memory_GB = 1e308 ran without a word (1e308 GB is 1e317 bytes: infinity).
TEST(TopologyTomlTest, MemoryOf1e308GBIsRefused) {
  ExpectError(Replace(kBase, "memory_GB = 80", "memory_GB = 1e308"),
              {"gpu.memory_GB: must be at most 1e+06"});
}

TEST(TopologyTomlTest, HugeRatesAndLatenciesAreRefused) {
  ExpectError(Replace(kBase, "hbm_GBps = 3350.5", "hbm_GBps = 1e300"),
              {"gpu.hbm_GBps: must be at most 1e+12"});
  ExpectError(Replace(kBase, "fp32 = 494.5", "fp32 = 1e300"),
              {"gpu.peak_tflops.fp32: must be at most 1e+12"});
  ExpectError(Replace(kBase, "bandwidth_GBps = 50", "bandwidth_GBps = 1e300"),
              {"level[1].bandwidth_GBps: must be at most 1e+12"});
  ExpectError(Replace(kBase, "latency_us = 5", "latency_us = 1e300"),
              {"level[1].latency_us: must be at most 1e+06"});
  ExpectError(Replace(kBase, "latency_us = 5", "latency_us = 5\noversubscription = 1e300"),
              {"level[1].oversubscription: must be at most 1e+06"});
  ExpectError(Replace(kBase, "memory_GB = 80", "memory_GB = 80\nlaunch_overhead_us = 1e300"),
              {"gpu.launch_overhead_us: must be at most 1e+06"});
  // The bounds themselves are accepted.
  auto at_bounds = ParseTopologyToml(Replace(kBase, "memory_GB = 80", "memory_GB = 1e6"), "t.toml");
  EXPECT_TRUE(at_bounds.ok()) << at_bounds.status().message();
}

TEST(TopologyTomlTest, TorusDimsWhoseProductOverflowsAreRefused) {
  // 2^32 x 2^32 = 2^64 wraps to 0 in int64 arithmetic.
  const std::string torus = Replace(kBase, "kind = \"fat-tree\"", "kind = \"torus\"");
  ExpectError(Replace(torus, "latency_us = 5", "latency_us = 5\ndims = [4294967296, 4294967296]"),
              {"level[1].dims: product overflows 64 bits, so it differs from group_size 4"});
}

TEST(TopologyTomlTest, ADirectoryGivenAsTheFileSaysSo) {
  // Issue 17: a directory as a topology file reported "name: missing required key".
  const std::string dir = std::filesystem::temp_directory_path().string();
  auto topo = LoadTopologyFile(dir);
  ASSERT_FALSE(topo.ok());
  EXPECT_EQ(topo.status().message(), dir + ": is a directory, expected a file");
}

}  // namespace
}  // namespace meshplan

namespace meshplan {
namespace {

TEST(TopologyTomlTest, WritingIsStableUnderReadingBack) {
  // Found by fuzz_topology_toml: a latency whose microseconds no decimal reads back as exactly
  // (us -> s -> us in floating point) was written as its 17-digit decimal, which read back as a
  // slightly different value, written with other digits: write(read(write(x))) != write(x). Each
  // number below is written, read and written again; the two texts must be the same.
  for (const std::string latency :
       {"1.44444444444444444444444444444444444444444444444444444444444444444494", "0.1",
        "3.3333333333333333", "7e-3", "123456.789012345678"}) {
    auto first =
        ParseTopologyToml(Replace(kBase, "latency_us = 5", "latency_us = " + latency), "t.toml");
    ASSERT_TRUE(first.ok()) << first.status().message();
    const std::string written = TopologyToToml(*first);
    auto second = ParseTopologyToml(written, "written.toml");
    ASSERT_TRUE(second.ok()) << second.status().message();
    EXPECT_EQ(TopologyToToml(*second), written) << latency;
  }
}

}  // namespace
}  // namespace meshplan

namespace meshplan {
namespace {

// kBase with a second library: the [gpu] curve is FlashAttention-3's (the default), cuDNN's in a
// table of its own, and a framework overhead.
std::string TwoLibraries() {
  std::string text = Replace(kBase, "attention_efficiency = [[512, 0.3], [4096, 0.6]]",
                             "attention_kernel = \"fa3\"\n"
                             "attention_efficiency = [[512, 0.3], [4096, 0.6]]\n"
                             "backward_rate_ratio = 0.84\n"
                             "ring_step_partial_passes = 12\n"
                             "sliced_merge_passes = 2");
  return Replace(text, "[[level]]\nname = \"nvlink\"",
                 "[gpu.attention_kernels.cudnn]\n"
                 "efficiency = [[4096, 0.65]]\n"
                 "backward_rate_ratio = 0.81\n"
                 "head_dim = 128\n"
                 "pair_overhead_flops = 290\n"
                 "cut_row_extra_pairs = 250\n"
                 "source = \"measured\"\n\n"
                 "[framework]\nstep_overhead_us = 1500\n\n"
                 "[[level]]\nname = \"nvlink\"");
}

TEST(TopologyTomlKernels, TinyRatesAreRefusedLikeHugeOnes) {
  // Issue 33: bandwidth_GBps = 1e-300 made plan print 63-digit times.
  ExpectError(Replace(kBase, "bandwidth_GBps = 450", "bandwidth_GBps = 1e-300"),
              {"level[0].bandwidth_GBps: must be at least 0.001"});
  ExpectError(Replace(kBase, "hbm_GBps = 3350.5", "hbm_GBps = 1e-9"),
              {"gpu.hbm_GBps: must be at least 0.001"});
  ExpectError(Replace(kBase, "bf16 = 989", "bf16 = 1e-12"),
              {"gpu.peak_tflops.bf16: must be at least 1e-06"});
}

TEST(TopologyTomlKernels, AnUnknownKeyNamesTheNearestKnownOne) {
  // Issue 32: bandwidth_gbps is bandwidth_GBps with other letter case (distance 0 without case);
  // hbm_GB_ps is one edit from hbm_GBps; a key far from every known one gets no guess.
  ExpectError(Replace(kBase, "bandwidth_GBps", "bandwidth_gbps"),
              {"unknown key 'level[0].bandwidth_gbps' (did you mean 'bandwidth_GBps'?)"});
  ExpectError(Replace(kBase, "hbm_GBps", "hbm_GB_ps"),
              {"unknown key 'gpu.hbm_GB_ps' (did you mean 'hbm_GBps'?)"});
  EXPECT_EQ(DidYouMean("frobnicate_everything", {"model", "memory_GB"}), "");
}

TEST(TopologyTomlKernels, TheDefaultLibrarysCurveIsActiveAndAnotherCanBeChosen) {
  auto topo = ParseTopologyToml(TwoLibraries(), "t.toml");
  ASSERT_TRUE(topo.ok()) << topo.status().message();
  EXPECT_EQ(topo->gpu.attention_kernel, "fa3");
  EXPECT_DOUBLE_EQ(topo->gpu.Efficiency(4096), 0.6);
  EXPECT_DOUBLE_EQ(topo->gpu.backward_rate_ratio, 0.84);
  EXPECT_DOUBLE_EQ(topo->gpu.ring_step_partial_passes, 12);
  EXPECT_DOUBLE_EQ(topo->gpu.sliced_merge_passes, 2);
  EXPECT_DOUBLE_EQ(topo->framework.step_overhead_s, 1.5e-3);
  ASSERT_TRUE(topo->UseAttentionKernel("cudnn").ok());
  EXPECT_DOUBLE_EQ(topo->gpu.sliced_merge_passes, 0);  // cuDNN's table gives none
  EXPECT_EQ(topo->gpu.attention_kernel, "cudnn");
  EXPECT_DOUBLE_EQ(topo->gpu.Efficiency(512), 0.65);  // one point: held at every size
  EXPECT_DOUBLE_EQ(topo->gpu.backward_rate_ratio, 0.81);
  EXPECT_DOUBLE_EQ(topo->gpu.ring_step_partial_passes, 0);  // the table's default
  EXPECT_DOUBLE_EQ(topo->gpu.cut_row_extra_pairs, 250);     // each library its own cut cost
  // k = 290 at d = 128: d = 64 runs at (1 + 290/512) / (1 + 290/256) = 0.7340 of the rate.
  EXPECT_NEAR(topo->gpu.HeadDimRateFactor(64), (1 + 290.0 / 512) / (1 + 290.0 / 256), 1e-15);
  EXPECT_DOUBLE_EQ(topo->gpu.HeadDimRateFactor(128), 1.0);
  // Back to fa3, from its copy in the table of curves.
  ASSERT_TRUE(topo->UseAttentionKernel("fa3").ok());
  EXPECT_DOUBLE_EQ(topo->gpu.ring_step_partial_passes, 12);
  EXPECT_DOUBLE_EQ(topo->gpu.sliced_merge_passes, 2);
  EXPECT_DOUBLE_EQ(topo->gpu.cut_row_extra_pairs, 0);      // the [gpu] curve gives none
  EXPECT_DOUBLE_EQ(topo->gpu.HeadDimRateFactor(64), 1.0);  // no non-matmul work given
}

TEST(TopologyTomlKernels, WritingAndReadingBackKeepsEveryCurve) {
  auto topo = ParseTopologyToml(TwoLibraries(), "t.toml");
  ASSERT_TRUE(topo.ok()) << topo.status().message();
  const std::string text = TopologyToToml(*topo);
  auto again = ParseTopologyToml(text, "again.toml");
  ASSERT_TRUE(again.ok()) << again.status().message() << "\n" << text;
  EXPECT_EQ(TopologyToToml(*again), text);
  ASSERT_TRUE(again->UseAttentionKernel("cudnn").ok());
  EXPECT_DOUBLE_EQ(again->gpu.pair_overhead_flops, 290);
  EXPECT_DOUBLE_EQ(again->gpu.cut_row_extra_pairs, 250);
  ASSERT_TRUE(again->UseAttentionKernel("fa3").ok());
  EXPECT_DOUBLE_EQ(again->gpu.sliced_merge_passes, 2);
  EXPECT_DOUBLE_EQ(again->framework.step_overhead_s, 1.5e-3);
}

TEST(TopologyTomlKernels, ALibraryWithoutACurveIsOneLineNamingTheKey) {
  auto topo = ParseTopologyToml(TwoLibraries(), "t.toml");
  ASSERT_TRUE(topo.ok());
  const Status fa2 = topo->UseAttentionKernel("fa2");
  EXPECT_FALSE(fa2.ok());
  EXPECT_EQ(fa2.message(),
            "t.toml: gpu.attention_kernels: no curve for 'fa2' on this GPU (it has: cudnn, fa3)");
  const Status odd = topo->UseAttentionKernel("flash4");
  EXPECT_NE(odd.message().find("t.toml: --attention-kernel: unknown attention library 'flash4'"),
            std::string::npos)
      << odd.message();
}

TEST(TopologyTomlKernels, BadLibrariesAndCurvesAreErrors) {
  const std::string two = TwoLibraries();
  ExpectError(Replace(two, "[gpu.attention_kernels.cudnn]", "[gpu.attention_kernels.xformers]"),
              {"gpu.attention_kernels.xformers: unknown attention library"});
  ExpectError(Replace(two, "attention_kernel = \"fa3\"", "attention_kernel = \"fa9\""),
              {"gpu.attention_kernel: unknown attention library 'fa9'"});
  ExpectError(Replace(two, "efficiency = [[4096, 0.65]]", "efficiency = [[4096, 1.65]]"),
              {"gpu.attention_kernels.cudnn.efficiency[0]: efficiency must be in (0, 1]"});
  ExpectError(Replace(two, "pair_overhead_flops = 290", "pair_overhead_flops = -1"),
              {"gpu.attention_kernels.cudnn.pair_overhead_flops: must be in [0, 1e6]"});
  ExpectError(Replace(two, "cut_row_extra_pairs = 250", "cut_row_extra_pairs = -3"),
              {"gpu.attention_kernels.cudnn.cut_row_extra_pairs: must be in [0, 1e6]"});
  ExpectError(Replace(two, "cut_row_extra_pairs = 250",
                      "cut_row_extra_pairs = 250\nsliced_merge_passes = 1001"),
              {"gpu.attention_kernels.cudnn.sliced_merge_passes: must be in [0, 1000]"});
  ExpectError(Replace(two, "sliced_merge_passes = 2", "sliced_merge_passes = -2"),
              {"gpu.sliced_merge_passes: must be in [0, 1000]"});
  ExpectError(Replace(two, "source = \"measured\"\n", ""),
              {"gpu.attention_kernels.cudnn.source: missing required key"});
  ExpectError(Replace(two, "step_overhead_us = 1500", "step_overhead_us = -1"),
              {"framework.step_overhead_us: must not be negative"});
  // The default library names one without a curve: the [gpu] curve is absent.
  std::string no_default = Replace(two, "attention_efficiency = [[512, 0.3], [4096, 0.6]]\n", "");
  no_default = Replace(no_default, "backward_rate_ratio = 0.84\n", "");
  no_default = Replace(no_default, "ring_step_partial_passes = 12\n", "");
  no_default = Replace(no_default, "sliced_merge_passes = 2\n", "");
  ExpectError(no_default, {"gpu.attention_kernel: no curve for 'fa3'"});
  // A [gpu] key of the curve without the curve.
  ExpectError(Replace(no_default, "attention_kernel = \"fa3\"",
                      "attention_kernel = \"cudnn\"\nbackward_rate_ratio = 0.9"),
              {"gpu.backward_rate_ratio: describes gpu.attention_efficiency, which is absent"});
  // One library given twice: as the [gpu] curve and as a table.
  ExpectError(
      Replace(two, "attention_kernel = \"fa3\"", "attention_kernel = \"cudnn\""),
      {"gpu.attention_efficiency: library 'cudnn' (gpu.attention_kernel) also has a curve"});
}

}  // namespace
}  // namespace meshplan

namespace meshplan {
namespace {

TEST(CalibrationRecordTest, ALoadUnlikeTheCalibrationsGetsACaveat) {
  CalibrationRecord r;
  EXPECT_EQ(r.LoadCaveat(6.0), "");  // nothing recorded
  r.load_average = 10.5;
  r.cores = 2;  // allowed difference max(1, 2 / 4) = 1
  EXPECT_EQ(r.LoadCaveat(10.0), "");
  EXPECT_EQ(r.LoadCaveat(11.5), "");
  EXPECT_NE(r.LoadCaveat(6.0).find("calibrated at a load of 10.5 (1-minute average) and the load "
                                   "is 6.0 now"),
            std::string::npos);
  EXPECT_EQ(r.LoadCaveat(-1), "");  // the load is unknown now
  r.cores = 16;                     // allowed difference 16 / 4 = 4
  EXPECT_EQ(r.LoadCaveat(7.0), "");
  EXPECT_NE(r.LoadCaveat(6.0), "");
}

TEST(CalibrationRecordTest, TheTableReadsAndWritesBack) {
  const std::string text =
      std::string(kBase) +
      "\n[calibration]\nload_average = 1.25\ncores = 2\nkernel_median_error = 0.059\n"
      "kernel_max_error = 0.319\n";
  auto topo = ParseTopologyToml(text, "t.toml");
  ASSERT_TRUE(topo.ok()) << topo.status().message();
  EXPECT_DOUBLE_EQ(topo->calibration.load_average, 1.25);
  EXPECT_EQ(topo->calibration.cores, 2);
  EXPECT_DOUBLE_EQ(topo->calibration.kernel_max_error, 0.319);
  auto again = ParseTopologyToml(TopologyToToml(*topo), "again.toml");
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(TopologyToToml(*again), TopologyToToml(*topo));
  EXPECT_DOUBLE_EQ(again->calibration.kernel_median_error, 0.059);
  ExpectError(std::string(kBase) + "\n[calibration]\nload_average = -2\n",
              {"calibration.load_average: must not be negative"});
  ExpectError(std::string(kBase) + "\n[calibration]\nload = 2\n",
              {"unknown key 'calibration.load'"});
}

TEST(CalibrationRecordTest, TheReferenceBlockReadsAndWritesBack) {
  // 4410 us is 4.41e-3 s; the spread is kept as written.
  const std::string text = std::string(kBase) +
                           "\n[calibration]\nload_average = 0.5\nreference_block_us = 4410\n"
                           "reference_head_dim = 64\nspeed_spread = 0.062\n";
  auto topo = ParseTopologyToml(text, "t.toml");
  ASSERT_TRUE(topo.ok()) << topo.status().message();
  EXPECT_DOUBLE_EQ(topo->calibration.reference_block_s, 4.41e-3);
  EXPECT_EQ(topo->calibration.reference_head_dim, 64);
  EXPECT_DOUBLE_EQ(topo->calibration.speed_spread, 0.062);
  const std::string written = TopologyToToml(*topo);
  EXPECT_NE(written.find("reference_block_us = 4410\nreference_head_dim = 64\nspeed_spread = "
                         "0.062\n"),
            std::string::npos)
      << written;
  auto again = ParseTopologyToml(written, "again.toml");
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(TopologyToToml(*again), written);
  // Without a load average (calibrate could not read one) the reference is still written.
  Topology no_load = *topo;
  no_load.calibration.load_average = -1;
  const std::string reference_only = TopologyToToml(no_load);
  EXPECT_EQ(reference_only.find("load_average"), std::string::npos) << reference_only;
  auto back = ParseTopologyToml(reference_only, "r.toml");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_DOUBLE_EQ(back->calibration.reference_block_s, 4.41e-3);
}

TEST(CalibrationRecordTest, ASpeedThatMovedMoreThanFivePercentGetsACaveat) {
  CalibrationRecord c;
  c.reference_block_s = 4.41e-3;
  c.reference_head_dim = 64;
  c.speed_spread = 0.05;  // kSpeedSpreadNote itself: no note
  EXPECT_EQ(c.SpeedCaveat(), "");
  c.speed_spread = 0.062;
  EXPECT_NE(c.SpeedCaveat().find("moved 6.2% while it was calibrated (a 4.41 ms reference block"),
            std::string::npos)
      << c.SpeedCaveat();
  c.reference_block_s = 0;  // no reference: nothing to say
  c.reference_head_dim = 0;
  EXPECT_EQ(c.SpeedCaveat(), "");
}

TEST(CalibrationRecordTest, TheReferenceBlockIsRefusedIncomplete) {
  const std::string base = std::string(kBase) + "\n[calibration]\n";
  ExpectError(base + "reference_block_us = 4410\n",
              {"calibration.reference_head_dim: missing (the reference block's time and head dim "
               "go together)"});
  ExpectError(base + "reference_head_dim = 64\n", {"calibration.reference_block_us: missing"});
  ExpectError(base + "reference_block_us = 0\nreference_head_dim = 64\n",
              {"calibration.reference_block_us: must be positive"});
  ExpectError(base + "reference_block_us = 10\nreference_head_dim = 0\n",
              {"calibration.reference_head_dim: must be positive"});
  ExpectError(base + "reference_block_us = 10\nreference_head_dim = 2048\n",
              {"calibration.reference_head_dim: must be in 1..1024"});
  ExpectError(base + "speed_spread = 0.1\n",
              {"calibration.speed_spread: needs reference_block_us"});
  ExpectError(base + "reference_block_us = 10\nreference_head_dim = 8\nspeed_spread = -0.1\n",
              {"calibration.speed_spread: must not be negative"});
}

TEST(CalibrationRecordTest, TheDrawsAndTheirRangeReadAndWriteBack) {
  const std::string text = std::string(kBase) +
                           "\n[calibration]\nload_average = 0.5\ndraws = 3\n"
                           "draw_range = [0.931, 1.084]\n";
  auto topo = ParseTopologyToml(text, "t.toml");
  ASSERT_TRUE(topo.ok()) << topo.status().message();
  EXPECT_EQ(topo->calibration.draws, 3);
  EXPECT_DOUBLE_EQ(topo->calibration.draw_low, 0.931);
  EXPECT_DOUBLE_EQ(topo->calibration.draw_high, 1.084);
  EXPECT_TRUE(topo->calibration.has_draw_range());
  const std::string written = TopologyToToml(*topo);
  EXPECT_NE(written.find("draws = 3\ndraw_range = [0.931, 1.084]\n"), std::string::npos) << written;
  auto again = ParseTopologyToml(written, "again.toml");
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(TopologyToToml(*again), written);
}

TEST(CalibrationRecordTest, ADrawRangeWiderThanFivePercentGetsACaveat) {
  CalibrationRecord c;
  c.draws = 3;
  c.draw_low = 0.95;  // kSpeedSpreadNote on both sides: no note
  c.draw_high = 1.05;
  EXPECT_EQ(c.DrawCaveat(), "");
  c.draw_high = 1.084;
  EXPECT_NE(c.DrawCaveat().find("the median of 3 draws"), std::string::npos) << c.DrawCaveat();
  EXPECT_NE(c.DrawCaveat().find("lie 0.95-1.08x this file's"), std::string::npos) << c.DrawCaveat();
  c.draw_high = 1.0;
  c.draw_low = 0.9;  // below alone is enough
  EXPECT_NE(c.DrawCaveat(), "");
  c.draws = 1;  // one draw has no range
  EXPECT_EQ(c.DrawCaveat(), "");
}

TEST(CalibrationRecordTest, TheDrawsAreRefusedInconsistent) {
  const std::string base = std::string(kBase) + "\n[calibration]\n";
  ExpectError(base + "draws = 0\n", {"calibration.draws: must be at least 1"});
  ExpectError(base + "draws = 10\ndraw_range = [0.9, 1.1]\n",
              {"calibration.draws: must be in 1..9"});
  ExpectError(base + "draws = 3\n", {"calibration.draws: more than 1 needs draw_range"});
  ExpectError(base + "draw_range = [0.9, 1.1]\n",
              {"calibration.draw_range: needs draws of 2 or more"});
  ExpectError(base + "draws = 1\ndraw_range = [0.9, 1.1]\n",
              {"calibration.draw_range: needs draws of 2 or more"});
  ExpectError(base + "draws = 3\ndraw_range = [1.1, 1.2]\n",
              {"calibration.draw_range: must be [low, high] with 0 < low <= 1 <= high"});
  ExpectError(base + "draws = 3\ndraw_range = [0.9]\n",
              {"calibration.draw_range: expected a pair [low, high]"});
  ExpectError(base + "draws = 3\ndraw_range = 1.1\n",
              {"calibration.draw_range: expected a pair [low, high]"});
  ExpectError(base + "draws = 3\ndraw_range = [0.9, \"x\"]\n", {"calibration.draw_range[1]"});
}

// Issue 32: a file written by hand with several key mistakes gets them all in one message, in
// the order root, [gpu], each [[level]] (keys of a table in sorted order, then its missing ones);
// a required key a misspelling already points at is not listed again as missing.
TEST(TopologyTomlKeys, EveryKeyProblemAtOnce) {
  const char* text =
      "name = \"mine\"\n"
      "[gpu]\nmodel = \"H100\"\nmemory_gb = 80\nhbm_GBps = 3350\n"
      "[[level]]\nname = \"nvlink\"\nkind = \"switch\"\ngroup_size = 8\nbandwidth_gbps = 450\n";
  auto t = ParseTopologyToml(text, "mine.toml");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(t.status().message(),
            "mine.toml: 4 problems: unknown key 'gpu.memory_gb' (did you mean 'memory_GB'?); "
            "gpu.peak_tflops: missing required key; unknown key 'level[0].bandwidth_gbps' (did "
            "you mean 'bandwidth_GBps'?); level[0].latency_us: missing required key");
}

// Mixed fabrics (issue 48 item 5): units of a level on other links than the level's. kBase's ib
// level has 4 units (nodes of 8 GPUs): node 1 and nodes 2-3 on a 25 GB/s, 8 us RoCE fabric.
const char kFabric[] = R"(
[[level.fabric]]
name = "roce"
units = [1, "2-3"]
bandwidth_GBps = 25
latency_us = 8
)";

TEST(TopologyTomlTest, FabricsGiveTheirUnitsOwnPortsAndRoundTrip) {
  auto topo = ParseTopologyToml(std::string(kBase) + kFabric, "t.toml");
  ASSERT_TRUE(topo.ok()) << topo.status().message();
  ASSERT_EQ(topo->levels[1].fabrics.size(), 1u);
  const LevelFabric& f = topo->levels[1].fabrics[0];
  EXPECT_EQ(f.name, "roce");
  EXPECT_EQ(f.units, (std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {2, 3}}));
  EXPECT_EQ(f.UnitCount(), 3);
  EXPECT_TRUE(topo->HasMixedFabrics());
  // GPU 7 is in node 0 (the level's 50 GB/s, 5 us), GPU 8 in node 1 and GPU 31 in node 3 (RoCE).
  EXPECT_EQ(topo->FabricOf(1, 7), nullptr);
  EXPECT_EQ(topo->FabricOf(1, 8), &f);
  EXPECT_EQ(topo->PortBandwidth(1, 7), 50e9);
  EXPECT_EQ(topo->PortBandwidth(1, 31), 25e9);
  // A message is as fast as its slower end: node 0 to node 1 at min(50, 25), max(5, 8) us.
  EXPECT_EQ(topo->PairBandwidth(1, 0, 8), 25e9);
  EXPECT_DOUBLE_EQ(topo->RouteLatencySeconds(1, 0, 8), 8e-6);
  EXPECT_DOUBLE_EQ(topo->RouteLatencySeconds(1, 8, 0), 8e-6);
  EXPECT_DOUBLE_EQ(topo->RouteLatencySeconds(1, 8, 16), 8e-6);
  // The nvlink level has no fabric: its own figures for every GPU.
  EXPECT_EQ(topo->PortBandwidth(0, 8), 450e9);
  EXPECT_DOUBLE_EQ(topo->RouteLatencySeconds(0, 8, 9), 1e-6);
  // Written and read back to the same text; the ranges stay ranges.
  const std::string written = TopologyToToml(*topo);
  EXPECT_NE(written.find("units = [1, \"2-3\"]"), std::string::npos) << written;
  auto again = ParseTopologyToml(written, "again.toml");
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(TopologyToToml(*again), written);
  // Without latency_us a fabric has the level's.
  auto no_latency =
      ParseTopologyToml(Replace(std::string(kBase) + kFabric, "latency_us = 8\n", ""), "t.toml");
  ASSERT_TRUE(no_latency.ok()) << no_latency.status().message();
  EXPECT_DOUBLE_EQ(no_latency->levels[1].fabrics[0].latency_s, 5e-6);
  EXPECT_FALSE(ParseTopologyToml(kBase, "t.toml")->HasMixedFabrics());
}

TEST(TopologyTomlTest, FabricErrorsNameTheKeyAndReason) {
  const std::string base = std::string(kBase) + kFabric;
  ExpectError(Replace(base, "units = [1, \"2-3\"]", "units = [4]"),
              {"level[1].fabric[0].units", "4 is outside 0..3", "4 groups of level 'nvlink'"});
  ExpectError(Replace(base, "units = [1, \"2-3\"]", "units = [1, \"0-1\"]"),
              {"level[1].fabric[0].units", "unit 1 is listed twice"});
  ExpectError(base + "\n[[level.fabric]]\nname = \"eth\"\nunits = [\"0-2\"]\nbandwidth_GBps = 10\n",
              {"level[1].fabric[1].units", "unit 1 is in two fabrics ('roce' and 'eth')"});
  ExpectError(Replace(base, "units = [1, \"2-3\"]", "units = [\"3-\"]"),
              {"level[1].fabric[0].units[0]", "'3-' is not a range"});
  ExpectError(Replace(base, "units = [1, \"2-3\"]", "units = [2.5]"),
              {"level[1].fabric[0].units[0]", "expected a unit index"});
  ExpectError(Replace(base, "units = [1, \"2-3\"]", "units = []"),
              {"level[1].fabric[0].units", "at least one unit"});
  ExpectError(Replace(base, "bandwidth_GBps = 25", "bandwidth_GBps = 0"),
              {"level[1].fabric[0].bandwidth_GBps", "must be positive"});
  ExpectError(Replace(base, "latency_us = 8", "latency = 8"), {"level[1].fabric[0]", "latency"});
  ExpectError(Replace(base, "name = \"roce\"\n", ""),
              {"level[1].fabric[0].name", "missing required key"});
  ExpectError(base + "\n[[level.fabric]]\nname = \"roce\"\nunits = [0]\nbandwidth_GBps = 10\n",
              {"level[1].fabric[1].name", "'roce' used twice"});
  ExpectError(Replace(base, "kind = \"fat-tree\"", "kind = \"ring\""),
              {"level[1].fabric", "mixed fabrics are described on switch and fat-tree levels"});
}

}  // namespace
}  // namespace meshplan
