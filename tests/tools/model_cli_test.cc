// --model, --tp/--dp and --framework end to end (issue 31): what the plan says of a model's layers,
// TP beside CP, a framework's settings, and one-line refusals of bad models and degrees.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "tests/tools/cli_fixture.h"
#include "tests/tools/json_reader.h"

namespace meshplan {
namespace {

using testing::Json;

class ModelCli : public testing::CliFixture {
 protected:
  static constexpr const char* kLlama =
      "plan --model llama-3.1-70b --tp 8 -t dgx-h100-32node --seq 1M -q";

  Json ParseJson(const testing::CliResult& r) {
    Json j;
    EXPECT_TRUE(Json::Parse(r.out, &j)) << r.out.substr(0, 400);
    return j;
  }
  static double Number(const Json* object, const std::string& key) {
    const Json* v = object == nullptr ? nullptr : object->Find(key);
    return v == nullptr ? std::nan("") : v->number;
  }
};

TEST_F(ModelCli, TheTableSaysWhichTimeIsALayerAndWhichAllOfThem) {
  const testing::CliResult r = Run(std::string(kLlama) + " --framework megatron --top 3");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* part :
       {"model:    llama-3.1-70b: 80 layers, 64/8 heads of 128\n",
        "parallel: TP 8 x CP 32 x DP 1 = 256 GPUs; each GPU computes 8/1 heads",
        "'time' is one attention layer (forward+backward); 'all layers' is the model's 80 "
        "attention layers in one training step (forward+backward)",
        "all layers", "framework: Megatron-Core (TransformerEngine) runs ",
        "--context-parallel-size 32 --cp-comm-type ", "best over every scheme: "}) {
    EXPECT_NE(r.out.find(part), std::string::npos) << part << "\n" << r.out;
  }
  // TP 8 on 8-GPU nodes leaves one CP rank per node: 32 of them.
  EXPECT_NE(r.out.find("32 x H100 SXM5 80GB (dgx-h100-32node: nvlink 1 x 450 GB/s, ib 32 x 50"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find(" step:"), std::string::npos) << "a layer is never called a step";
}

TEST_F(ModelCli, JsonCarriesTheModelTheDegreesAndEveryLayersTime) {
  const testing::CliResult r = Run(std::string(kLlama) + " --format json --top 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = ParseJson(r);
  const Json* model = j.Find("model");
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(Number(model, "layers"), 80);
  EXPECT_EQ(Number(model, "q_heads"), 64);
  const Json* parallel = j.Find("parallel");
  EXPECT_EQ(Number(parallel, "tp"), 8);
  EXPECT_EQ(Number(parallel, "cp"), 32);
  EXPECT_EQ(Number(parallel, "dp"), 1);
  EXPECT_EQ(Number(parallel, "gpus"), 256);
  const Json* plans = j.Find("plans");
  ASSERT_TRUE(plans != nullptr && !plans->items.empty());
  // Every layer of Llama 3.1 70B is global: all 80 take one layer's time.
  const Json& first = plans->items.front();
  EXPECT_NEAR(Number(&first, "all_layers_s"), 80 * Number(&first, "time_s"),
              1e-9 * Number(&first, "all_layers_s"));
}

TEST_F(ModelCli, ASlidingModelSumsItsGlobalAndWindowLayers) {
  // Gemma 2 27B: 23 global and 23 window:4096 layers. The same plan's time under each mask, from
  // two runs with the model's heads given by hand, makes the sum: 23 x t_causal + 23 x t_window.
  const std::string common =
      " -t dgx-h100-1node --seq 64K --schemes ring --pass fwd --format json --top 0 "
      "--all-variants -q";
  const testing::CliResult gemma = Run("plan --model gemma-2-27b" + common);
  ASSERT_EQ(gemma.exit_code, 0) << gemma.err;
  const std::string heads = " --heads 32 --kv-heads 16 --head-dim 128";
  const testing::CliResult causal = Run("plan" + heads + common);
  const testing::CliResult window = Run("plan" + heads + " --mask window:4096" + common);
  ASSERT_EQ(causal.exit_code, 0) << causal.err;
  ASSERT_EQ(window.exit_code, 0) << window.err;
  auto time_of = [&](const Json& doc, const std::string& params) {
    for (const Json& p : doc.Find("plans")->items) {
      if (p.Find("parameters")->string == params) return Number(&p, "time_s");
    }
    return std::nan("");
  };
  const Json g = ParseJson(gemma), c = ParseJson(causal), w = ParseJson(window);
  int checked = 0;
  for (const Json& p : g.Find("plans")->items) {
    const std::string params = p.Find("parameters")->string;
    const double in_window = time_of(w, params);
    if (std::isnan(in_window)) {
      // No such plan for the window layers (a striped ring takes causal and full masks only):
      // the plan cannot serve the model, and says so with a null.
      EXPECT_EQ(p.Find("all_layers_s")->kind, Json::kNull) << params;
      continue;
    }
    const double expected = 23 * time_of(c, params) + 23 * in_window;
    EXPECT_NEAR(Number(&p, "all_layers_s"), expected, 1e-9 * expected) << params;
    ++checked;
  }
  EXPECT_GE(checked, 2);
}

// The sliding layers' plan comes from the schemes asked for: with --schemes ring alone there is
// none TransformerEngine runs under a window (p2p is refused there), so Megatron runs no plan,
// naming why, instead of an all_gather plan the request left out (issue 47).
TEST_F(ModelCli, MegatronsSlidingLayersPlanKeepsToTheSchemesAskedFor) {
  ExpectRefusedWith(
      "plan --model gemma-2-27b --tp 8 -t dgx-h100-32node --seq 128K "
      "--framework megatron -q --schemes ring",
      {"runs none of the valid plans", "its sliding-window layers",
       "a2a or all_gather only, not p2p"});
  const testing::CliResult r =
      Run("plan --model gemma-2-27b --tp 8 -t dgx-h100-32node --seq 128K --framework megatron -q "
          "--schemes ring,allgather-kv --top 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("(the sliding-window layers run allgather-kv"), std::string::npos) << r.out;
}

TEST_F(ModelCli, MegatronGivesGemmasSlidingLayersACommTypeTransformerEngineTakes) {
  // Gemma 2 27B under TP 8 on 256 H100: 4/2 heads per GPU on CP groups of 32. TransformerEngine
  // runs its 23 sliding layers (0, 2, ..., 44) with all_gather or a2a only, and a2a cannot split
  // 2 KV heads over 32 GPUs: the window layers run all_gather. The global layers' comm type is
  // either that same one (one value) or another, then one value per layer (46 of them).
  const std::string request =
      "plan --model gemma-2-27b --tp 8 -t dgx-h100-32node --seq 1M --framework megatron -q";
  const testing::CliResult r = Run(request + " --format json --top 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = ParseJson(r);
  const Json& best = j.Find("plans")->items.front();
  const std::string settings = best.Find("framework_settings")->string;
  const size_t from = settings.find("--cp-comm-type ");
  ASSERT_NE(from, std::string::npos) << settings;
  std::vector<std::string> types;
  size_t at = from + std::string("--cp-comm-type ").size();
  while (at < settings.size() && settings.compare(at, 2, "--") != 0) {
    const size_t end = std::min(settings.find(' ', at), settings.size());
    types.push_back(settings.substr(at, end - at));
    at = end + 1;
  }
  if (types.size() == 1) {
    EXPECT_EQ(types[0], "all_gather") << settings;
  } else {
    ASSERT_EQ(types.size(), 46u) << settings;
    for (size_t i = 0; i < types.size(); ++i) {
      if (i % 2 == 0) {
        EXPECT_EQ(types[i], "all_gather") << i << ": " << settings;
      } else {
        EXPECT_TRUE(types[i] == "p2p" || types[i] == "a2a+p2p") << i << ": " << settings;
      }
    }
    const Json* window = best.Find("window_layers_plan");
    ASSERT_NE(window, nullptr);
    EXPECT_EQ(window->string.rfind("allgather-kv", 0), 0u) << window->string;
  }
  EXPECT_NE(settings.find("--tensor-model-parallel-size 8 --sequence-parallel "
                          "--context-parallel-size 32"),
            std::string::npos)
      << settings;
  EXPECT_NE(settings.find(" --seq-length 1048576"), std::string::npos) << settings;
  // Gemma 2 soft-caps its scores (Gemma2Config's default); TransformerEngine's CP paths do not.
  const testing::CliResult text = Run(request + " --top 1");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("attn_logit_softcapping is dropped"), std::string::npos) << text.out;
}

TEST_F(ModelCli, MegatronTimesTheAttentionLibraryTransformerEngineChooses) {
  // TransformerEngine prefers cuDNN's fused attention on Hopper; the H100 file has its curve.
  const testing::CliResult r = Run(std::string(kLlama) + " --framework megatron --top 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("; attention kernel cudnn)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("kernels timed with cudnn, not fa3"), std::string::npos) << r.out;
  // --attention-kernel keeps its word.
  const testing::CliResult fa3 =
      Run(std::string(kLlama) + " --framework megatron --top 1 --attention-kernel fa3");
  ASSERT_EQ(fa3.exit_code, 0) << fa3.err;
  EXPECT_NE(fa3.out.find("; attention kernel fa3)"), std::string::npos) << fa3.out;
  EXPECT_EQ(fa3.out.find("kernels timed with cudnn"), std::string::npos) << fa3.out;
}

TEST_F(ModelCli, FrameworksRefuseWhatTheyCannotLaunchWithTheRealReason) {
  // A full mask over 8200 = 8 x 1025 tokens: every layout splits it over 8 GPUs, but Megatron's
  // validate_args wants a multiple of 2 x 8 = 16, whatever the comm type or layout.
  const testing::CliResult full =
      Run("plan -t dgx-h100-1node --seq 8200 --mask full --framework megatron -q");
  EXPECT_EQ(full.exit_code, 2) << full.out;
  EXPECT_NE(full.err.find("a multiple of 2 x CP = 16 whatever the mask, and 8200 is not"),
            std::string::npos)
      << full.err;
  EXPECT_EQ(full.err.find("not striped"), std::string::npos) << full.err;
  // InternEvo's tensor.size is its sequence degree: nothing runs TP 8 beside CP 32.
  const testing::CliResult internevo = Run(std::string(kLlama) + " --framework internevo");
  EXPECT_EQ(internevo.exit_code, 2) << internevo.out;
  EXPECT_NE(internevo.err.find("tensor.size is the sequence-parallel degree"), std::string::npos)
      << internevo.err;
  // yunchang beside TP 8 builds its groups by hand, one GPU per TP group, and shards by them.
  const testing::CliResult yunchang = Run(std::string(kLlama) + " --framework yunchang --top 1");
  ASSERT_EQ(yunchang.exit_code, 0) << yunchang.err;
  EXPECT_NE(yunchang.out.find("for t in range(8): sp = [t + 8*i for i in range(32)]"),
            std::string::npos)
      << yunchang.out;
  EXPECT_NE(yunchang.out.find("(x, sp.index(rank), 32, rd="), std::string::npos) << yunchang.out;
}

TEST_F(ModelCli, FlagsGivenBesideAModelOverrideIt) {
  const testing::CliResult r = Run(
      "plan --model llama-3.1-8b --heads 16 --kv-heads 4 -t dgx-h100-1node --seq 64K -q --top 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("workload: B=1 S=64K Hq=16 Hkv=4 d=128"), std::string::npos) << r.out;
  // A config.json file works like a shipped name.
  const std::string file = Write("config.json", R"({"num_attention_heads": 32,
      "num_key_value_heads": 8, "hidden_size": 4096, "num_hidden_layers": 32})");
  const testing::CliResult f = Run("plan --model " + file + " -t dgx-h100-1node --seq 64K -q");
  ASSERT_EQ(f.exit_code, 0) << f.err;
  EXPECT_NE(f.out.find("Hq=32 Hkv=8 d=128"), std::string::npos) << f.out;
}

TEST_F(ModelCli, BadModelsAndDegreesAreOneLineExit2) {
  const std::string broken = Write("broken.json", "{\"num_attention_heads\": 8,");
  ExpectRefusedWith("plan --model " + broken + " -q", {"--model: ", broken, "not JSON"});
  const std::string odd = Write("odd.json", R"({"num_attention_heads": 12,
      "num_key_value_heads": 5, "head_dim": 64, "num_hidden_layers": 2})");
  ExpectRefusedWith("plan --model " + odd + " -q",
                    {odd, "num_key_value_heads: 5 does not divide num_attention_heads (12)"});
  const std::string mla = Write("mla.json", R"({"num_attention_heads": 128,
      "hidden_size": 7168, "num_hidden_layers": 61, "kv_lora_rank": 512,
      "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128})");
  ExpectRefusedWith("plan --model " + mla + " -q", {"multi-head latent attention"});
  ExpectRefusedWith("plan --model no-such-model -q", {"unknown model 'no-such-model'"});
  ExpectRefused("plan --tp 3 -t dgx-h100-32node -q",
                "--tp: 3 does not divide the 8 GPUs of a 'nvlink' group (TP stays inside a node)");
  ExpectRefusedWith("plan --model llama-3.1-70b --tp 16 -q", {"--tp: 16 does not divide"});
  ExpectRefusedWith("plan --framework magi -q", {"--framework magi: MagiAttention"});
  ExpectRefusedWith("plan --framework deepspeed -q", {"--framework: unknown framework"});
  ExpectRefusedWith("plan --model gemma-2-27b --mask full --seq 64K -q", {"window", "--mask full"});
}

TEST_F(ModelCli, APlanMadeBesideTpRunsOnItsCpGroup) {
  const std::string plan = (dir_ / "p.toml").string();
  ASSERT_EQ(Run(std::string(kLlama) + " -o " + plan).exit_code, 0);
  const std::string text = Read(plan);
  EXPECT_NE(text.find("tp = 8\n"), std::string::npos) << text;
  EXPECT_NE(text.find("gpus = 32\n"), std::string::npos) << text;
  const testing::CliResult sim = Run("simulate " + plan + " -q");
  EXPECT_EQ(sim.exit_code, 0) << sim.err;
  // simulate --model: all 80 layers at the simulated layer time.
  const testing::CliResult all =
      Run("simulate " + plan + " -q --format json --model llama-3.1-70b");
  ASSERT_EQ(all.exit_code, 0) << all.err;
  const Json j = ParseJson(all);
  EXPECT_EQ(Number(&j, "layers"), 80);
  EXPECT_NEAR(Number(&j, "all_layers_s"), 80 * Number(&j, "simulated_s"),
              1e-9 * Number(&j, "all_layers_s"));
}

TEST_F(ModelCli, SweepTakesTpAsAnAxisAndAModelsLayers) {
  // The sweep's TP 8 row is the plan command's best ring beside TP 8 on the same cluster, and
  // its all-layer time the model's 80 layers at that time.
  const testing::CliResult sweep =
      Run("sweep --model llama-3.1-70b --tp 1,8 -t dgx-h100-4node --seq 256K --schemes ring -q "
          "--format json");
  ASSERT_EQ(sweep.exit_code, 0) << sweep.err;
  const Json rows = ParseJson(sweep);
  ASSERT_EQ(rows.Find("rows")->items.size(), 2u);
  const Json& tp8 = rows.Find("rows")->items[1];
  EXPECT_EQ(Number(&tp8, "tp"), 8);
  const testing::CliResult plan =
      Run("plan --model llama-3.1-70b --tp 8 -t dgx-h100-4node --seq 256K --schemes ring -q "
          "--format json --top 1");
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  const Json planned = ParseJson(plan);
  const Json& best = planned.Find("plans")->items.front();
  EXPECT_DOUBLE_EQ(Number(&tp8, "time_s"), Number(&best, "time_s"));
  EXPECT_NEAR(Number(&tp8, "all_layers_s"), 80 * Number(&tp8, "time_s"),
              1e-9 * Number(&tp8, "all_layers_s"));
  // A TP degree the cluster or the heads cannot take makes its rows invalid, with the reason.
  const testing::CliResult bad =
      Run("sweep --tp 3 -t dgx-h100-4node --seq 256K --schemes ring -q --format json");
  ASSERT_EQ(bad.exit_code, 0) << bad.err;
  EXPECT_NE(bad.out.find("--tp: 3 does not divide the 8 GPUs"), std::string::npos) << bad.out;
  // A sweep file says it as `tp`.
  const std::string file = Write("s.toml", "tp = [2, 4]\nseq = [\"64K\"]\nschemes = [\"ring\"]\n");
  const testing::CliResult from_file = Run("sweep --sweep-file " + file + " -t dgx-h100-1node -q");
  ASSERT_EQ(from_file.exit_code, 0) << from_file.err;
  // Each row ends with its TP degree (and an empty all_layers_s: no model).
  EXPECT_NE(from_file.out.find(",2,\n"), std::string::npos) << from_file.out;
  EXPECT_NE(from_file.out.find(",4,\n"), std::string::npos) << from_file.out;
}

TEST_F(ModelCli, TopoNewWritesAClusterFileInOneCommand) {
  // Issue 32's target: a valid 8 x 8 H200 cluster from one command, its GPU from the shipped
  // H200 file (H200 SXM 141GB, NVLink 4 at 450 GB/s), its NICs at 400 Gb/s = 50 GB/s. Since
  // issue 46 the file names the GPU's catalog entry, and the curves come along through it.
  const std::string file = (dir_ / "h200.toml").string();
  const testing::CliResult r =
      Run("topo new --gpu h200 --nodes 8 --gpus-per-node 8 --nic-gbps 400 -o " + file);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string text = Read(file);
  EXPECT_NE(text.find("[gpu]\ncatalog = \"h200-sxm\"\n"), std::string::npos) << text;
  EXPECT_NE(text.find("bandwidth_GBps = 50\n"), std::string::npos) << text;
  const testing::CliResult shown = Run("topo show " + file + " --format toml");
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_NE(shown.out.find("model = \"H200 SXM 141GB\""), std::string::npos) << shown.out;
  EXPECT_NE(shown.out.find("[gpu.attention_kernels."), std::string::npos) << "curves come along";
  const testing::CliResult v = Run("topo validate " + file);
  EXPECT_EQ(v.exit_code, 0) << v.err;
  EXPECT_NE(v.out.find("ok (64 GPUs, 2 levels)"), std::string::npos) << v.out;
  EXPECT_EQ(Run("plan -t " + file + " --seq 256K -q --top 1").exit_code, 0);
  ExpectRefusedWith("topo new --gpu mi300", {"--gpu: unknown GPU 'mi300'"});
  ExpectRefusedWith("topo new --gpu h100 --gpus-per-node 16", {"--gpus-per-node: 16"});
}

TEST_F(ModelCli, FitBudgetsAllTheModelsLayers) {
  const testing::CliResult r =
      Run("fit --model llama-3.1-8b --seq 256K --budget-s 8 -t dgx-h100-32node --max-gpus 256");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("budget:   8.000 s for the 32 attention layers of llama-3.1-8b in one "
                       "training step (fwd+bwd): 250.00 ms per layer"),
            std::string::npos)
      << r.out;
}

}  // namespace
}  // namespace meshplan
