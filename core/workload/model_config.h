// A model's attention as its Hugging Face config.json describes it: heads, KV heads, head dim,
// layers, element type and which layers attend through a sliding window. `--model NAME|FILE`
// reads one; shipped names are small files in models/ holding the same fields (models/README.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/dtype.h"
#include "core/base/status.h"
#include "core/workload/workload_fields.h"

namespace meshplan {

struct ModelConfig {
  std::string name;    // the shipped name, or the file's path
  std::string source;  // where the values come from ("_source" of a shipped file, else the path)
  int64_t q_heads = 0;
  int64_t kv_heads = 0;
  int64_t head_dim = 0;
  int64_t layers = 0;  // attention layers (num_hidden_layers)
  std::optional<DType> dtype;
  // Layers attending through a sliding window of `window` tokens (the rest attend globally, with
  // the workload's mask). 0 window layers: every layer is global.
  int64_t window_layers = 0;
  int64_t window = 0;
  // Which layers slide, in layer order (empty when none does): a framework that takes one setting
  // per layer needs the order (planner/frameworks.h).
  std::vector<bool> sliding;
  // The attention scores are soft-capped (attn_logit_softcapping set, or Gemma 2's default of
  // 50 when the field is absent): some frameworks' context-parallel paths drop it.
  bool logit_softcapping = false;

  // The rest of the layer, for the whole training step (step/): 0 where the file does not say.
  int64_t hidden_size = 0;        // hidden_size
  int64_t intermediate_size = 0;  // the MLP's inner width (intermediate_size)
  int64_t vocab_size = 0;         // vocab_size
  bool tied_embeddings = true;    // tie_word_embeddings (absent: Hugging Face's default, true)
  // A gated MLP (SwiGLU, GeGLU: gate and up projections, then down): every model_type but the
  // GPT-2, GPT-NeoX, GPT-J, OPT, BLOOM and Falcon families, whose MLP is up then down.
  bool gated_mlp = true;
  // Routed experts (num_local_experts, num_experts or n_routed_experts): 0 for a dense model.
  int64_t experts = 0;

  int64_t global_layers() const { return layers - window_layers; }
  // The workload fields the model sets (heads, KV heads, head dim, dtype when stated).
  WorkloadFields Fields() const;
  // "llama-3.1-70b: 80 layers, 64/8 heads of 128" (+ ", 23 of them a 4096-token window").
  std::string Describe() const;
  // Whether the whole step can be modelled: the fields it needs (hidden_size, intermediate_size,
  // vocab_size) are there, and the model is dense. Errors name the model (its file's path or
  // shipped name) and the field.
  Status RequireWholeModel() const;
};

// Parses config.json text; `file` names it in errors ("FILE: FIELD: reason"). Reads
// num_attention_heads, num_key_value_heads (default: the heads), head_dim (default: hidden_size /
// num_attention_heads), num_hidden_layers, torch_dtype (or dtype) and the sliding-window fields:
// layer_types, else Gemma 2's alternation (model_type gemma2: even layers slide), Gemma 3's
// sliding_window_pattern, Qwen2's use_sliding_window with max_window_layers, or a sliding_window
// alone (every layer), and attn_logit_softcapping (Gemma 2 caps by default). Refused with one line:
// text that is not JSON, a missing or non-integer field, heads not divisible by KV heads, and
// attention meshplan cannot express (multi-head latent attention, whose Q/K and V head dims
// differ).
Result<ModelConfig> ParseModelConfig(std::string_view text, const std::string& file);

// True when `text` names a shipped model rather than a file: no '/' and no ".json" at the end.
bool IsModelName(const std::string& text);

// `name_or_path`: an existing file, a path, or a shipped model's name (models/NAME.json, found
// beside the shipped topologies: the source tree's models/ or the installed share/meshplan/models).
// An unknown name lists the shipped ones.
Result<ModelConfig> LoadModelConfig(const std::string& name_or_path);

}  // namespace meshplan
