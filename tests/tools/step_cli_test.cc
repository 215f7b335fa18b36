// meshplan step end to end (issue 47): the step's figures and parts, the whole model's memory
// deciding the recompute, and one-line refusals (exit 2) of what the step cannot model.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "tests/tools/cli_fixture.h"
#include "tests/tools/json_reader.h"

namespace meshplan {
namespace {

using testing::Json;

class StepCli : public testing::CliFixture {
 protected:
  static double Number(const Json& object, const std::string& key) {
    const Json* v = object.Find(key);
    return v == nullptr ? std::nan("") : v->number;
  }
};

TEST_F(StepCli, SeventyBAtOneMillionFitsOnlyWithFullRecompute) {
  // Llama 3.1 70B at 1M tokens on 256 H100 with TP 8 (CP 32): without recompute the 80 layers'
  // activations alone are 80 x 1M/32 tokens x ((2 x (2 x 8192 + 8192 + 2 x 1024 + 8192) + 4 x 64)
  // + 2 x (2 x 8192 + 2 x 28672 + 28672)) / 8 bytes = 80 x 32768 x 34336 = 84 GiB: over 80 GB;
  // with full recompute each layer keeps 2 x 8192 / 8 bytes a token (0.5 GiB in all).
  const std::string base =
      "step --model llama-3.1-70b -t dgx-h100-32node --seq 1M --tp 8 "
      "--format json -q --recompute ";
  const testing::CliResult none = Run(base + "none");
  ASSERT_EQ(none.exit_code, 0) << none.err;
  Json j;
  ASSERT_TRUE(Json::Parse(none.out, &j)) << none.out.substr(0, 400);
  EXPECT_FALSE(j.Find("fits")->boolean);
  const double kept = 80.0 * 32768 * 34336;
  EXPECT_NEAR(Number(*j.Find("memory"), "activations_bytes"), kept, kept * 1e-9);
  // It says what would fit: full recompute (TP 16 would span two nodes, and DP 1 leaves no GPU to
  // take for more CP or PP).
  bool says = false;
  for (const Json& note : j.Find("notes")->items)
    says = says || note.string.find("would fit with full recompute (about ") != std::string::npos;
  EXPECT_TRUE(says) << none.out;
  const testing::CliResult full = Run(base + "full");
  ASSERT_EQ(full.exit_code, 0) << full.err;
  ASSERT_TRUE(Json::Parse(full.out, &j));
  EXPECT_TRUE(j.Find("fits")->boolean);
  EXPECT_GT(Number(*j.Find("time"), "recompute_s"), 0);
  // auto takes full recompute here, and says why none was passed over.
  const testing::CliResult autorun =
      Run("step --model llama-3.1-70b -t dgx-h100-32node --seq 1M --tp 8 -q");
  ASSERT_EQ(autorun.exit_code, 0) << autorun.err;
  EXPECT_NE(autorun.out.find("recompute full"), std::string::npos) << autorun.out;
  EXPECT_NE(autorun.out.find("note: recompute none: "), std::string::npos) << autorun.out;
  EXPECT_NE(autorun.out.find("does not fit"), std::string::npos) << autorun.out;
}

TEST_F(StepCli, FiguresAreTheModelFlopsOverTheStep) {
  // model_tflops_per_gpu = model_flops / (step_s x GPUs); tokens/s/GPU = 8 x 4096 / (step_s x 8);
  // the parts add up to the step.
  const testing::CliResult r =
      Run("step --model llama-3.1-8b -t dgx-h100-1node --seq 4K --tp 2 --dp 4 --global-batch 8 "
          "--recompute none --format json -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Json j;
  ASSERT_TRUE(Json::Parse(r.out, &j)) << r.out;
  const double step = Number(j, "step_s");
  EXPECT_NEAR(Number(j, "model_tflops_per_gpu"), Number(j, "model_flops") / (step * 8) / 1e12,
              1e-9 * Number(j, "model_tflops_per_gpu"));
  EXPECT_NEAR(Number(j, "tokens_per_s_per_gpu"), 8.0 * 4096 / (step * 8), 1e-6);
  double sum = 0;
  for (const auto& [key, value] : j.Find("time")->members) sum += value.number;
  EXPECT_NEAR(sum, step, step * 1e-9);
  EXPECT_EQ(Number(j, "cp"), 1);
  EXPECT_EQ(Number(j, "micro_batches"), 2);
}

TEST_F(StepCli, MegatronsLineCarriesTheWholeStep) {
  // TP 2 x PP 2 (2 virtual stages) x DP 2 on 8 GPUs, 8 sequences a step: 8 / (DP 2 x 1) = 4
  // micro-batches, 32 layers / (2 x 2) = 8 a virtual stage; full recompute and FP8 GEMMs.
  const testing::CliResult r =
      Run("step --model llama-3.1-8b -t dgx-h100-1node --seq 8K --tp 2 --pp 2 --vpp 2 --dp 2 "
          "--global-batch 8 --recompute full --gemm-dtype fp8 --framework megatron -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* part :
       {"--tensor-model-parallel-size 2 --sequence-parallel --context-parallel-size 1",
        "--seq-length 8192 --pipeline-model-parallel-size 2 "
        "--num-layers-per-virtual-pipeline-stage 8 --micro-batch-size 1 --global-batch-size 8 "
        "--recompute-granularity full --recompute-method uniform --recompute-num-layers 1 "
        "--fp8-format hybrid"}) {
    EXPECT_NE(r.out.find(part), std::string::npos) << part << "\n" << r.out;
  }
}

TEST_F(StepCli, PipelineOverlapIsMegatronsDefaultAndItsFlagTurnsItOff) {
  // With virtual stages Megatron overlaps the pipeline's sends (overlap_p2p_comm); turned off, its
  // line carries --no-overlap-p2p-communication and the JSON says so. The H100 catalog states
  // the whole step's kernel fraction, 0.717 (topologies/gpus/h100-sxm5.toml), and the JSON
  // carries it.
  const std::string base =
      "step --model llama-3.1-8b -t dgx-h100-1node --seq 8K --tp 2 --pp 2 --vpp 2 --dp 2 "
      "--global-batch 8 --recompute full --framework megatron --format json -q";
  const testing::CliResult on = Run(base);
  const testing::CliResult off = Run(base + " --no-overlap-p2p-comm");
  ASSERT_EQ(on.exit_code, 0) << on.err;
  ASSERT_EQ(off.exit_code, 0) << off.err;
  Json a, b;
  ASSERT_TRUE(Json::Parse(on.out, &a)) << on.out;
  ASSERT_TRUE(Json::Parse(off.out, &b)) << off.out;
  EXPECT_TRUE(a.Find("overlap_p2p_comm")->boolean);
  EXPECT_FALSE(b.Find("overlap_p2p_comm")->boolean);
  EXPECT_EQ(on.out.find("--no-overlap-p2p-communication"), std::string::npos);
  EXPECT_NE(off.out.find("--no-overlap-p2p-communication"), std::string::npos) << off.out;
  // Overlap can only hide traffic.
  EXPECT_LE(Number(*a.Find("time"), "pp_p2p_s"), Number(*b.Find("time"), "pp_p2p_s"));
  EXPECT_GT(Number(*b.Find("time"), "pp_p2p_s"), 0);
  EXPECT_DOUBLE_EQ(Number(a, "step_kernel_rate_fraction"), 0.717);
}

TEST_F(StepCli, AClusterFileCanTimeKernelsAtTheirRatesAlone) {
  // The shipped one-node DGX H100 file with the catalog's fraction (0.717) overridden by 1: every
  // kernel term is 0.717 of the shipped file's, and a note says the kernels ran at their rates
  // alone. Links' terms (none here beside the DP tail) are not compared.
  const std::string one_node = Write("alone.toml", R"toml(name = "alone"
[gpu]
catalog = "h100-sxm5"
step_kernel_rate_fraction = 1
[[level]]
name = "nvlink"
kind = "switch"
group_size = 8
bandwidth_GBps = 450
latency_us = 0.94
)toml");
  const std::string args =
      " --model llama-3.1-8b --seq 4K --tp 1 --dp 8 --global-batch 8 --recompute none -q";
  const testing::CliResult shipped = Run("step -t dgx-h100-1node --format json" + args);
  const testing::CliResult alone = Run("step -t " + one_node + " --format json" + args);
  ASSERT_EQ(shipped.exit_code, 0) << shipped.err;
  ASSERT_EQ(alone.exit_code, 0) << alone.err;
  Json a, b;
  ASSERT_TRUE(Json::Parse(shipped.out, &a)) << shipped.out;
  ASSERT_TRUE(Json::Parse(alone.out, &b)) << alone.out;
  EXPECT_DOUBLE_EQ(Number(b, "step_kernel_rate_fraction"), 1.0);
  for (const char* part : {"attention_s", "gemm_s", "elementwise_s", "optimizer_s"}) {
    const double stretched = Number(*a.Find("time"), part);
    EXPECT_NEAR(Number(*b.Find("time"), part), 0.717 * stretched, 1e-9 * stretched) << part;
  }
  const testing::CliResult text = Run("step -t " + one_node + args);
  EXPECT_NE(text.out.find("kernels timed at their rates alone"), std::string::npos) << text.out;
}

TEST_F(StepCli, TheSearchFindsTheFastestOfEveryConfigurationAnsweredAlone) {
  // 8 GPUs of one node, Llama 3.1 8B (32/8 heads, 32 layers), 8 sequences of 8K: TP, PP, CP and
  // DP are the ordered splits of 2^3 into four powers of two, C(3 + 3, 3) = 20, every one allowed
  // (TP <= 8 divides 32 and 8 heads, PP <= 8 splits 32 layers, 8192 % (2 CP) = 0, DP divides 8).
  const std::string base =
      "step --model llama-3.1-8b -t dgx-h100-1node --seq 8K --global-batch 8 --format json -q";
  testing::CliResult r = Run(base + " --search");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Json j;
  ASSERT_TRUE(Json::Parse(r.out, &j)) << r.out.substr(0, 400);
  EXPECT_EQ(Number(j, "candidates"), 20);
  const Json& ranked = *j.Find("configurations");
  ASSERT_FALSE(ranked.items.empty());
  // Every configuration answered alone: none that fits is faster than the search's first.
  const double best = Number(ranked.items.front(), "step_s");
  int fitting = 0;
  for (int tp = 1; tp <= 8; tp *= 2) {
    for (int pp = 1; tp * pp <= 8; pp *= 2) {
      for (int cp = 1; tp * pp * cp <= 8; cp *= 2) {
        const int dp = 8 / (tp * pp * cp);
        const testing::CliResult one =
            Run(base + " --tp " + std::to_string(tp) + " --pp " + std::to_string(pp) + " --cp " +
                std::to_string(cp) + " --dp " + std::to_string(dp));
        ASSERT_EQ(one.exit_code, 0) << one.err;
        Json k;
        ASSERT_TRUE(Json::Parse(one.out, &k));
        if (!k.Find("fits")->boolean) continue;
        ++fitting;
        EXPECT_GE(Number(k, "step_s"), best * (1 - 1e-12))
            << "TP " << tp << " PP " << pp << " CP " << cp << " DP " << dp;
      }
    }
  }
  EXPECT_GT(fitting, 0);
}

TEST_F(StepCli, EachFrameworksBestSaysWhyItCannotRunTheOverallBest) {
  const testing::CliResult r =
      Run("step --model llama-3.1-70b -t dgx-h100-32node --seq 1M --global-batch 8 --search "
          "--compare-frameworks --top 3 -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_NE(r.out.find("any (every plan)  "), std::string::npos) << r.out;
  // The best over every plan is Mesh-like (attention2d-o or mesh), which none of the three
  // frameworks implements: each is slower and says why.
  for (const char* name : {"megatron", "yunchang", "internevo"}) {
    EXPECT_NE(r.out.find("\n" + std::string(name) + " "), std::string::npos) << name;
    EXPECT_NE(r.out.find("  " + std::string(name) + " cannot run the best plan: "),
              std::string::npos)
        << name << "\n"
        << r.out;
  }
  EXPECT_EQ(Run("step --model llama-3.1-8b -t dgx-h100-1node --compare-frameworks -q").exit_code,
            2);
}

TEST_F(StepCli, RefusesWhatItCannotModelInOneLine) {
  // A config without intermediate_size: the file and the field.
  const std::string path = Write("attention-only.json",
                                 R"({"num_attention_heads": 32, "num_hidden_layers": 4,
                                     "hidden_size": 4096, "vocab_size": 32000})");
  testing::CliResult r = Run("step --model " + path + " -t dgx-h100-1node --seq 4K -q");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("intermediate_size: missing field"), std::string::npos) << r.err;
  // Degrees that are not the cluster's GPUs.
  r = Run("step --model llama-3.1-8b -t dgx-h100-1node --seq 4K --tp 2 --cp 2 --dp 3 -q");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--gpus: TP x CP x DP x PP = 12 GPUs, but the cluster has 8"),
            std::string::npos)
      << r.err;
  // A GPU file that states no GEMM rate (the L40S entry states none).
  r = Run("step --model llama-3.1-8b -t l40s-pcie-8gpu --seq 4K -q");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("gpu.gemm_efficiency: no bf16 GEMM rate"), std::string::npos) << r.err;
  // Pipeline stages that do not divide the layers.
  r =
      Run("step --model llama-3.1-8b -t dgx-h100-1node --seq 4K --pp 3 --cp 1 --tp 1 --dp 1 "
          "--gpus 8 -q");
  EXPECT_EQ(r.exit_code, 2);
  // A search without a global batch, and one where nothing fits (405B on 8 GPUs).
  r = Run("step --model llama-3.1-8b -t dgx-h100-1node --seq 4K --search -q");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--global-batch: required"), std::string::npos) << r.err;
  r = Run("step --model llama-3.1-405b -t dgx-h100-1node --seq 8K --global-batch 16 --search -q");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no configuration of 8 GPUs fits"), std::string::npos) << r.err;
  r = Run("step --model llama-3.1-8b -t dgx-h100-1node --seq 4K --recompute sometimes -q");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--recompute"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace meshplan
