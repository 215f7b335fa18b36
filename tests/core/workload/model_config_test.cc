// Model configs (core/workload/model_config.h): the shipped files against their published configs,
// the sliding-window rules of each model family, and one-line refusals of bad or inexpressible
// files.
#include "core/workload/model_config.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace meshplan {
namespace {

std::string ShippedModel(const std::string& name) {
  return std::string(MESHPLAN_SOURCE_DIR) + "/models/" + name + ".json";
}

struct Published {
  const char* name;
  int64_t heads, kv_heads, head_dim, layers, window_layers, window;
};

// The published values, from each model's config.json as released (models/README.md has the
// copies they were checked against); head dims where the config has no head_dim are its
// hidden_size / num_attention_heads: 4096 / 32, 8192 / 64, 16384 / 128, 8192 / 64, 12288 / 96.
// Gemma 2 27B: head_dim 128 given, sliding_window 4096 on the even layers of 46 (transformers
// modeling_gemma2.py: is_sliding = not bool(layer_idx % 2)): 23 of them.
TEST(ModelConfig, ShippedModelsMatchTheirPublishedConfigs) {
  const Published models[] = {
      {"llama-3.1-8b", 32, 8, 128, 32, 0, 0},     {"llama-3.1-70b", 64, 8, 128, 80, 0, 0},
      {"llama-3.1-405b", 128, 8, 128, 126, 0, 0}, {"qwen2.5-72b", 64, 8, 128, 80, 0, 0},
      {"mistral-large-2", 96, 8, 128, 88, 0, 0},  {"gemma-2-27b", 32, 16, 128, 46, 23, 4096},
  };
  for (const Published& p : models) {
    auto m = LoadModelConfig(ShippedModel(p.name));
    ASSERT_TRUE(m.ok()) << p.name << ": " << m.status().message();
    EXPECT_EQ(m->name, p.name);
    EXPECT_EQ(m->q_heads, p.heads) << p.name;
    EXPECT_EQ(m->kv_heads, p.kv_heads) << p.name;
    EXPECT_EQ(m->head_dim, p.head_dim) << p.name;
    EXPECT_EQ(m->layers, p.layers) << p.name;
    EXPECT_EQ(m->window_layers, p.window_layers) << p.name;
    EXPECT_EQ(m->window, p.window) << p.name;
    EXPECT_FALSE(m->source.empty()) << p.name;
  }
  // The Llama, Qwen and Mistral releases are bfloat16.
  EXPECT_EQ(LoadModelConfig(ShippedModel("llama-3.1-70b"))->dtype, DType::kBf16);
}

TEST(ModelConfig, AShippedNameAndAFileAreBothModels) {
  auto by_name = LoadModelConfig("llama-3.1-8b");
  ASSERT_TRUE(by_name.ok()) << by_name.status().message();
  EXPECT_EQ(by_name->layers, 32);
  auto unknown = LoadModelConfig("llama-9");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("unknown model 'llama-9'"), std::string::npos);
  EXPECT_NE(unknown.status().message().find("llama-3.1-70b"), std::string::npos)
      << "the shipped names are listed: " << unknown.status().message();
  EXPECT_TRUE(IsModelName("llama-3.1-8b"));
  EXPECT_FALSE(IsModelName("config.json"));
  EXPECT_FALSE(IsModelName("dir/llama"));
}

Result<ModelConfig> ParseConfigText(const std::string& text) {
  return ParseModelConfig(text, "c.json");
}

void ExpectConfigError(const std::string& text, const std::string& needle) {
  auto m = ParseConfigText(text);
  ASSERT_FALSE(m.ok()) << text;
  EXPECT_EQ(m.status().message().rfind("c.json: ", 0), 0u) << m.status().message();
  EXPECT_NE(m.status().message().find(needle), std::string::npos) << m.status().message();
  EXPECT_EQ(m.status().message().find('\n'), std::string::npos) << m.status().message();
}

TEST(ModelConfig, HeadDimComesFromHiddenSizeWhenNotGiven) {
  auto m =
      ParseConfigText(R"({"num_attention_heads": 40, "num_key_value_heads": 8, "hidden_size": 5120,
                     "num_hidden_layers": 40, "torch_dtype": "float16"})");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->head_dim, 128);  // 5120 / 40
  EXPECT_EQ(m->dtype, DType::kFp16);
  EXPECT_EQ(m->window_layers, 0);
  // No num_key_value_heads: multi-head attention, as many KV heads as heads.
  auto mha =
      ParseConfigText(R"({"num_attention_heads": 16, "head_dim": 64, "num_hidden_layers": 2})");
  ASSERT_TRUE(mha.ok());
  EXPECT_EQ(mha->kv_heads, 16);
  EXPECT_FALSE(mha->dtype.has_value());
}

TEST(ModelConfig, SlidingLayersFollowEachFamilysRule) {
  const std::string base = R"("num_attention_heads": 8, "head_dim": 64, "num_hidden_layers": 12)";
  // layer_types names each layer: 3 sliding of 12.
  auto typed = ParseConfigText("{" + base + R"(, "sliding_window": 512, "layer_types": [
      "sliding_attention", "full_attention", "full_attention", "full_attention",
      "sliding_attention", "full_attention", "full_attention", "full_attention",
      "sliding_attention", "full_attention", "full_attention", "full_attention"]})");
  ASSERT_TRUE(typed.ok()) << typed.status().message();
  EXPECT_EQ(typed->window_layers, 3);
  EXPECT_EQ(typed->window, 512);
  // Gemma 2: layers 0, 2, ..., 10 slide: 6 of 12 (7 of 13).
  auto gemma2 =
      ParseConfigText("{" + base + R"(, "model_type": "gemma2", "sliding_window": 4096})");
  ASSERT_TRUE(gemma2.ok());
  EXPECT_EQ(gemma2->window_layers, 6);
  // Gemma 3: every 6th layer is global: 12 - 12 / 6 = 10 slide.
  auto gemma3 =
      ParseConfigText("{" + base + R"(, "sliding_window_pattern": 6, "sliding_window": 1024})");
  ASSERT_TRUE(gemma3.ok());
  EXPECT_EQ(gemma3->window_layers, 10);
  // Qwen2: use_sliding_window false: none; true with max_window_layers 8: layers 8..11.
  auto off = ParseConfigText("{" + base + R"(, "use_sliding_window": false, "sliding_window": 4096,
                                   "max_window_layers": 8})");
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(off->window_layers, 0);
  auto on = ParseConfigText("{" + base + R"(, "use_sliding_window": true, "sliding_window": 4096,
                                  "max_window_layers": 8})");
  ASSERT_TRUE(on.ok());
  EXPECT_EQ(on->window_layers, 4);
  // A sliding_window alone (Mistral 7B v0.1): every layer; null: none.
  auto all = ParseConfigText("{" + base + R"(, "sliding_window": 4096})");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->window_layers, 12);
  auto none = ParseConfigText("{" + base + R"(, "sliding_window": null})");
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->window_layers, 0);
}

TEST(ModelConfig, SlidingLayersKeepTheirOrderAndSoftCappingIsRead) {
  const std::string base = R"("num_attention_heads": 8, "head_dim": 64, "num_hidden_layers": 6)";
  const std::vector<bool> even = {true, false, true, false, true, false};
  // Gemma 2 slides on layers 0, 2, 4 and caps its scores by default (Gemma2Config: 50.0).
  auto gemma2 =
      ParseConfigText("{" + base + R"(, "model_type": "gemma2", "sliding_window": 4096})");
  ASSERT_TRUE(gemma2.ok());
  EXPECT_EQ(gemma2->sliding, even);
  EXPECT_TRUE(gemma2->logit_softcapping);
  auto uncapped = ParseConfigText("{" + base +
                                  R"(, "model_type": "gemma2", "sliding_window": 4096,
                             "attn_logit_softcapping": null})");
  ASSERT_TRUE(uncapped.ok());
  EXPECT_FALSE(uncapped->logit_softcapping);
  // Gemma 3 with pattern 3: layers 2 and 5 are global; Qwen2 from max_window_layers 4: 4 and 5.
  auto gemma3 =
      ParseConfigText("{" + base + R"(, "sliding_window_pattern": 3, "sliding_window": 1024,
                                      "attn_logit_softcapping": 30.0})");
  ASSERT_TRUE(gemma3.ok());
  EXPECT_EQ(gemma3->sliding, (std::vector<bool>{true, true, false, true, true, false}));
  EXPECT_TRUE(gemma3->logit_softcapping);
  auto qwen = ParseConfigText("{" + base + R"(, "use_sliding_window": true, "sliding_window": 4096,
                                    "max_window_layers": 4})");
  ASSERT_TRUE(qwen.ok());
  EXPECT_EQ(qwen->sliding, (std::vector<bool>{false, false, false, false, true, true}));
  EXPECT_FALSE(qwen->logit_softcapping);
  // No sliding layer: an empty list.
  auto dense = ParseConfigText("{" + base + "}");
  ASSERT_TRUE(dense.ok());
  EXPECT_TRUE(dense->sliding.empty());
}

TEST(ModelConfig, BadFilesAreOneLineNamingTheFileAndField) {
  ExpectConfigError("{\"num_attention_heads\": 8,", "not JSON");
  ExpectConfigError("[1, 2]", "expected a JSON object");
  // A number beyond a double is another exception of the JSON parser (found by fuzzing).
  ExpectConfigError("{\"num_attention_heads\": 4444444e4444}", "not JSON meshplan can read");
  ExpectConfigError(R"({"num_key_value_heads": 8, "head_dim": 64, "num_hidden_layers": 2})",
                    "num_attention_heads: missing field");
  ExpectConfigError(R"({"num_attention_heads": 8, "head_dim": 64})",
                    "num_hidden_layers: missing field");
  ExpectConfigError(R"({"num_attention_heads": 8, "num_hidden_layers": 2})",
                    "head_dim: missing field (and no hidden_size)");
  ExpectConfigError(R"({"num_attention_heads": 12, "num_key_value_heads": 8, "head_dim": 64,
                  "num_hidden_layers": 2})",
                    "num_key_value_heads: 8 does not divide num_attention_heads (12)");
  ExpectConfigError(R"({"num_attention_heads": 7, "hidden_size": 1000, "num_hidden_layers": 2})",
                    "hidden_size: 1000 is not a multiple of num_attention_heads (7)");
  ExpectConfigError(R"({"num_attention_heads": "8", "head_dim": 64, "num_hidden_layers": 2})",
                    "num_attention_heads: expected a positive integer, got \"8\"");
  ExpectConfigError(R"({"num_attention_heads": 0, "head_dim": 64, "num_hidden_layers": 2})",
                    "num_attention_heads: must be in 1..");
  ExpectConfigError(R"({"num_attention_heads": 8, "head_dim": 64, "num_hidden_layers": 2,
                  "torch_dtype": "int8"})",
                    "torch_dtype: 'int8' is not an element type");
  ExpectConfigError(R"({"num_attention_heads": 8, "head_dim": 64, "num_hidden_layers": 2,
                  "model_type": "gemma2"})",
                    "sliding_window: missing field");
  ExpectConfigError(R"({"num_attention_heads": 8, "head_dim": 64, "num_hidden_layers": 2,
                  "sliding_window": 64, "layer_types": ["full_attention"]})",
                    "layer_types: expected an array of num_hidden_layers (2) strings");
}

// DeepSeek V3's attention (its config.json's fields): multi-head latent attention, Q/K heads of
// 128 + 64 = 192 and V heads of 128, is refused with the reason.
TEST(ModelConfig, LatentAttentionIsRefusedWithItsReason) {
  ExpectConfigError(
      R"({"model_type": "deepseek_v3", "num_attention_heads": 128,
                  "num_key_value_heads": 128, "hidden_size": 7168, "num_hidden_layers": 61,
                  "kv_lora_rank": 512, "q_lora_rank": 1536, "qk_nope_head_dim": 128,
                  "qk_rope_head_dim": 64, "v_head_dim": 128})",
      "kv_lora_rank: multi-head latent attention (query/key heads of 192, value heads of "
      "128)");
}

}  // namespace
}  // namespace meshplan
