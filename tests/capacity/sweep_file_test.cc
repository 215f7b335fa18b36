// Sweep files: every key read into the settings, keys left out stay unset, topology paths
// relative to the file, and errors that name the file and the key.
#include "capacity/sweep_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "capacity/sweep_settings.h"
#include "core/base/units.h"
#include "planner/schemes/registry.h"

namespace meshplan::capacity {
namespace {

class SweepFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("meshplan_sweep_file_test_" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_ / "sub");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& text) {
    const std::filesystem::path path = dir_ / name;
    std::ofstream(path) << text;
    return path.string();
  }

  // The message of the error reading `text` gives, checked to name the file.
  std::string ErrorOf(const std::string& text) {
    const std::string path = Write("bad.toml", text);
    auto settings = ReadSweepFile(path);
    EXPECT_FALSE(settings.ok()) << text;
    if (settings.ok()) return "";
    EXPECT_EQ(settings.status().message().rfind(path + ": ", 0), 0u) << settings.status().message();
    return settings.status().message();
  }

  std::filesystem::path dir_;
};

TEST_F(SweepFileTest, ShippedClusterNamesStayNamesUnlessAFileOfThatNameIsBeside) {
  // "dgx-h100-4node" has no '/' and no .toml: a shipped cluster's name, kept as it is. "mine" is a
  // name too, but a file "mine" lies beside the sweep file, so it is that file.
  std::ofstream(dir_ / "sub" / "mine") << "not read here\n";
  const std::string path =
      Write("sub/names.toml", R"(topologies = ["dgx-h100-4node", "mine", "x.toml"])");
  auto settings = ReadSweepFile(path);
  ASSERT_TRUE(settings.ok()) << settings.status().message();
  EXPECT_EQ(*settings->topology_files,
            (std::vector<std::string>{"dgx-h100-4node", (dir_ / "sub" / "mine").string(),
                                      (dir_ / "sub" / "x.toml").string()}));
}

TEST_F(SweepFileTest, ReadsEveryKey) {
  const std::string path = Write("sub/sweep.toml", R"(
topologies = ["four.toml", "/abs/two.toml"]
gpus = "8..32"
seq = [65536, "128K"]
schemes = "ring,mesh"
batch = 2
heads = "32"
kv_heads = 8
head_dim = 64
dtype = "fp16"
partial_dtype = "bf16"
mask = "window:1024"
pass = "fwd"
reserve_gib = 1.5
simulate = true
)");
  auto settings = ReadSweepFile(path);
  ASSERT_TRUE(settings.ok()) << settings.status().message();
  ASSERT_TRUE(settings->topology_files.has_value());
  EXPECT_EQ(*settings->topology_files,
            (std::vector<std::string>{(dir_ / "sub" / "four.toml").string(), "/abs/two.toml"}));
  EXPECT_EQ(settings->gpus, (std::vector<int64_t>{8, 16, 32}));
  EXPECT_EQ(settings->seq_lens, (std::vector<int64_t>{65536, 131072}));
  EXPECT_EQ(settings->schemes, (std::vector<Scheme>{Scheme("ring"), Scheme("mesh")}));
  const WorkloadFields& w = settings->workload;
  EXPECT_EQ(w.batch, 2);
  EXPECT_EQ(w.q_heads, 32);
  EXPECT_EQ(w.kv_heads, 8);
  EXPECT_EQ(w.head_dim, 64);
  EXPECT_EQ(w.dtype, DType::kFp16);
  EXPECT_EQ(w.partial_dtype, DType::kBf16);
  ASSERT_TRUE(w.mask.has_value());
  EXPECT_EQ(w.mask->kind, MaskKind::kWindow);
  EXPECT_EQ(w.pass, Pass::kForward);
  EXPECT_FALSE(w.seq_len.has_value());  // the sweep's lengths are seq_lens
  EXPECT_EQ(settings->reserved_memory_bytes, 1.5 * kGiB);
  EXPECT_EQ(settings->simulate, true);
}

TEST_F(SweepFileTest, KeysLeftOutStayUnset) {
  auto settings = ReadSweepFile(Write("one.toml", "heads = 16\n"));
  ASSERT_TRUE(settings.ok()) << settings.status().message();
  EXPECT_EQ(settings->workload.q_heads, 16);
  EXPECT_FALSE(settings->topology_files || settings->gpus || settings->seq_lens ||
               settings->schemes || settings->reserved_memory_bytes || settings->simulate);
  EXPECT_FALSE(settings->workload.batch || settings->workload.kv_heads ||
               settings->workload.dtype || settings->workload.mask || settings->workload.pass);
}

TEST_F(SweepFileTest, ErrorsNameTheFileAndTheKey) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"colour = 1\n", {"unknown key 'colour'"}},
      {"gpus = \"8..4\"\n", {"gpus", "reversed"}},
      {"gpus = [8, true]\n", {"gpus: expected a count"}},
      {"schemes = [\"spiral\"]\n", {"schemes", "unknown scheme 'spiral'"}},
      {"topologies = 3\n", {"topologies: expected a string or an array of strings"}},
      {"heads = true\n", {"heads: expected a count"}},
      {"heads = \"x\"\n", {"heads", "not a valid count"}},
      {"dtype = 16\n", {"dtype: expected a string"}},
      {"dtype = \"fp7\"\n", {"dtype"}},
      {"mask = \"bogus\"\n", {"mask: unknown mask 'bogus'"}},
      {"pass = \"sideways\"\n", {"pass"}},
      {"reserve_gib = -1\n", {"reserve_gib: must not be negative"}},
      {"reserve_gib = \"1\"\n", {"reserve_gib: expected a number"}},
      {"simulate = 1\n", {"simulate: expected true or false"}},
  };
  for (const auto& [text, needles] : cases) {
    const std::string message = ErrorOf(text);
    for (const std::string& needle : needles)
      EXPECT_NE(message.find(needle), std::string::npos) << message;
  }
  auto missing = ReadSweepFile((dir_ / "missing.toml").string());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("missing.toml"), std::string::npos);
}

// Issue 17: "0^2" in a sweep file died with SIGFPE.
TEST_F(SweepFileTest, ZeroToAPowerIsAnErrorNamingTheFileAndKey) {
  const std::string message = ErrorOf("seq = \"0^2\"\n");
  EXPECT_NE(
      message.find(": seq: '0^2' is not a valid count: the base of a power must be at least 1"),
      std::string::npos)
      << message;
  EXPECT_NE(ErrorOf("heads = \"0^2\"\n").find(": heads: '0^2' is not a valid count"),
            std::string::npos);
}

// Issue 17: reserve_gib = 1e308 (infinite bytes) and nan were accepted.
TEST_F(SweepFileTest, ReserveGibMustBeFiniteAndInRange) {
  for (const char* text : {"reserve_gib = 1e308\n", "reserve_gib = nan\n", "reserve_gib = inf\n"}) {
    EXPECT_NE(ErrorOf(text).find(": reserve_gib: must be a finite number of GiB, at most 1e6"),
              std::string::npos)
        << text;
  }
}

// Issue 17: a workload the file makes invalid was reported as "workload: ..." without the file.
TEST_F(SweepFileTest, WorkloadErrorsNameTheSweepFile) {
  const std::string path = Write("heads.toml", "heads = 60\n");  // not a multiple of the 8 KV heads
  auto settings = ReadSweepFile(path);
  ASSERT_TRUE(settings.ok()) << settings.status().message();
  auto spec = MakeSweepSpec(*settings);
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().message(),
            path + ": workload: heads (60) must be a multiple of kv-heads (8)");

  // With flags over the file, both are named.
  SweepSettings flags;
  flags.workload.kv_heads = 7;
  flags.workload_source = "the flags";
  settings->Overlay(flags);
  spec = MakeSweepSpec(*settings);
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().message(),
            path + " and the flags: workload: heads (60) must be a multiple of kv-heads (7)");
}

}  // namespace
}  // namespace meshplan::capacity

namespace meshplan::capacity {
namespace {

// The planning keys every planning command takes as flags (issue 45): the values as the flags
// parse them. Llama 3.1 8B's config (models/llama-3.1-8b.json): 32 heads, 8 KV heads, head dim
// 4096 / 32 = 128, bf16; the file's own heads = 16 overrides the model's.
TEST_F(SweepFileTest, PlanningKeysReadAsTheirFlags) {
  const std::string path = Write("planning.toml", R"(model = "llama-3.1-8b"
heads = 16
tp = [1, 2]
dp = 2
framework = "megatron"
seq_round = "up"
attention_kernel = "fa2"
step_overhead_ms = 0.05
)");
  auto settings = ReadSweepFile(path);
  ASSERT_TRUE(settings.ok()) << settings.status().message();
  ASSERT_TRUE(settings->model.has_value());
  EXPECT_EQ(settings->model->name, "llama-3.1-8b");
  EXPECT_EQ(settings->workload.q_heads, 16);  // the file's key over the model's 32
  EXPECT_EQ(settings->workload.kv_heads, 8);
  EXPECT_EQ(settings->workload.head_dim, 128);
  EXPECT_EQ(settings->workload_source, path);
  EXPECT_EQ(*settings->tps, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(settings->dp, 2);
  EXPECT_EQ(settings->framework, planner::Framework::kMegatron);
  EXPECT_EQ(settings->seq_rounding, planner::SeqRounding::kUp);
  EXPECT_EQ(settings->attention_kernel, "fa2");
  EXPECT_DOUBLE_EQ(*settings->step_overhead_ms, 0.05);
  // Into the spec: the same choices every point's request carries (SweepPointRequest).
  auto spec = MakeSweepSpec(*settings);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->dp, 2);
  EXPECT_EQ(spec->framework, planner::Framework::kMegatron);
  const planner::PlanRequest request =
      SweepPointRequest(*spec, spec->topologies.front(), /*tp=*/2, /*seq_len=*/100001);
  EXPECT_EQ(request.degrees.tp, 2);
  EXPECT_EQ(request.degrees.dp, 2);
  EXPECT_EQ(request.workload.seq_len, 100001);
  EXPECT_EQ(request.workload.q_heads, 16);
  EXPECT_EQ(request.seq_rounding, planner::SeqRounding::kUp);
  EXPECT_FALSE(request.partial_dtype_given);
}

TEST_F(SweepFileTest, BadPlanningKeysNameTheKey) {
  EXPECT_NE(ErrorOf("framework = \"deepspeed\"\n").find("framework"), std::string::npos);
  EXPECT_NE(ErrorOf("seq_round = \"nearest\"\n").find("seq_round: expected up or down"),
            std::string::npos);
  EXPECT_NE(ErrorOf("dp = 0\n").find("dp: expected a whole number of replicas"), std::string::npos);
  EXPECT_NE(ErrorOf("model = 3\n").find("model: expected a string"), std::string::npos);
  EXPECT_NE(ErrorOf("step_overhead_ms = \"1\"\n").find("step_overhead_ms: expected a number"),
            std::string::npos);
}

TEST_F(SweepFileTest, AFrameworkMeshplanCannotPlanIsRefusedBeforeAnyPoint) {
  const std::string path = Write("magi.toml", "framework = \"magi\"\n");
  auto settings = ReadSweepFile(path);
  ASSERT_TRUE(settings.ok()) << settings.status().message();
  auto spec = MakeSweepSpec(*settings);
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.status().message().find("MagiAttention"), std::string::npos);
}

}  // namespace
}  // namespace meshplan::capacity
