#include "core/workload/model_config.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <system_error>
#include <vector>

#include "core/base/did_you_mean.h"
#include "core/base/toml_util.h"
#include "core/cluster/topology_catalog.h"

namespace meshplan {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

// Sizes past this are not a model's (and keep every product of them far from overflow).
constexpr int64_t kMaxModelCount = int64_t{1} << 24;

class Reader {
 public:
  Reader(const Json& root, const std::string& file) : root_(root), file_(file) {}

  Status Fail(const std::string& field, const std::string& why) const {
    return Status::Invalid(file_ + ": " + field + ": " + why);
  }
  bool Has(const char* field) const { return root_.contains(field) && !root_[field].is_null(); }

  // A positive integer field (a JSON integer, or a float with an integral value).
  Status Count(const char* field, bool required, int64_t* out) const {
    if (!Has(field)) return required ? Fail(field, "missing field") : Status::Ok();
    const Json& v = root_[field];
    if (v.is_number_integer() || v.is_number_unsigned()) {
      const int64_t x = v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(kMaxModelCount)
                            ? kMaxModelCount + 1
                            : v.get<int64_t>();
      if (x < 1 || x > kMaxModelCount) {
        return Fail(field, "must be in 1.." + std::to_string(kMaxModelCount) + ", got " + v.dump());
      }
      *out = x;
      return Status::Ok();
    }
    return Fail(field, "expected a positive integer, got " + v.dump());
  }

  const Json& root() const { return root_; }

 private:
  const Json& root_;
  const std::string& file_;
};

// torch_dtype (or transformers' newer `dtype`) as meshplan's element type.
Status ReadDType(const Reader& r, std::optional<DType>* out) {
  for (const char* field : {"torch_dtype", "dtype"}) {
    if (!r.Has(field)) continue;
    const Json& v = r.root()[field];
    if (!v.is_string()) return r.Fail(field, "expected a string, got " + v.dump());
    const std::string s = v.get<std::string>();
    if (s == "bfloat16") {
      *out = DType::kBf16;
    } else if (s == "float16") {
      *out = DType::kFp16;
    } else if (s == "float32") {
      *out = DType::kFp32;
    } else {
      return r.Fail(field, "'" + s +
                               "' is not an element type meshplan plans with (bfloat16, "
                               "float16 or float32)");
    }
    return Status::Ok();
  }
  return Status::Ok();
}

// Multi-head latent attention (DeepSeek V2/V3): its Q/K heads and V heads differ in size.
Status RefuseLatentAttention(const Reader& r) {
  if (!r.Has("kv_lora_rank") && !r.Has("v_head_dim")) return Status::Ok();
  int64_t nope = 0, rope = 0, v = 0;
  (void)r.Count("qk_nope_head_dim", false, &nope);
  (void)r.Count("qk_rope_head_dim", false, &rope);
  (void)r.Count("v_head_dim", false, &v);
  if (r.Has("kv_lora_rank") || (v > 0 && nope + rope > 0 && v != nope + rope)) {
    return r.Fail(r.Has("kv_lora_rank") ? "kv_lora_rank" : "v_head_dim",
                  "multi-head latent attention (query/key heads of " + std::to_string(nope + rope) +
                      ", value heads of " + std::to_string(v) +
                      "): meshplan plans attention whose Q, K and V heads have one head dim");
  }
  return Status::Ok();
}

// Which layers slide, from the fields that say so (ParseModelConfig's order).
Status ReadWindows(const Reader& r, ModelConfig* m) {
  int64_t window = 0;
  if (r.Has("sliding_window")) MESHPLAN_RETURN_IF_ERROR(r.Count("sliding_window", false, &window));
  auto need_window = [&](const char* why) -> Status {
    if (window > 0) return Status::Ok();
    return r.Fail("sliding_window", std::string("missing field (") + why + ")");
  };
  std::vector<bool> slides(static_cast<size_t>(m->layers), false);
  if (r.Has("layer_types")) {
    const Json& types = r.root()["layer_types"];
    if (!types.is_array() || static_cast<int64_t>(types.size()) != m->layers) {
      return r.Fail("layer_types", "expected an array of num_hidden_layers (" +
                                       std::to_string(m->layers) + ") strings");
    }
    for (size_t i = 0; i < types.size(); ++i) {
      const Json& t = types[i];
      const std::string s = t.is_string() ? t.get<std::string>() : t.dump();
      if (s == "sliding_attention") {
        slides[i] = true;
      } else if (s != "full_attention") {
        return r.Fail("layer_types", "'" + s +
                                         "' is not a layer meshplan plans (full_attention or "
                                         "sliding_attention)");
      }
    }
    if (std::count(slides.begin(), slides.end(), true) > 0)
      MESHPLAN_RETURN_IF_ERROR(need_window("layer_types has sliding layers"));
  } else if (r.Has("model_type") && r.root()["model_type"] == "gemma2") {
    // transformers' Gemma 2 slides on the even layers (Gemma2DecoderLayer: is_sliding = not
    // bool(layer_idx % 2)).
    MESHPLAN_RETURN_IF_ERROR(need_window("Gemma 2 slides on every other layer"));
    for (size_t i = 0; i < slides.size(); i += 2) slides[i] = true;
  } else if (r.Has("sliding_window_pattern")) {
    // Gemma 3: every pattern-th layer is global, the others slide.
    int64_t pattern = 0;
    MESHPLAN_RETURN_IF_ERROR(r.Count("sliding_window_pattern", false, &pattern));
    MESHPLAN_RETURN_IF_ERROR(need_window("sliding_window_pattern is set"));
    for (size_t i = 0; i < slides.size(); ++i) slides[i] = (i + 1) % pattern != 0;
  } else if (r.Has("use_sliding_window")) {
    // Qwen2: the layers from max_window_layers on slide, when use_sliding_window is true.
    const Json& use = r.root()["use_sliding_window"];
    if (!use.is_boolean()) return r.Fail("use_sliding_window", "expected true or false");
    if (use.get<bool>()) {
      int64_t first = 0;
      MESHPLAN_RETURN_IF_ERROR(r.Count("max_window_layers", true, &first));
      MESHPLAN_RETURN_IF_ERROR(need_window("use_sliding_window is true"));
      for (size_t i = static_cast<size_t>(first); i < slides.size(); ++i) slides[i] = true;
    }
  } else if (window > 0) {
    slides.assign(slides.size(), true);  // a sliding_window alone (Mistral 7B v0.1): every layer
  }
  const int64_t sliding = std::count(slides.begin(), slides.end(), true);
  m->window_layers = sliding;
  m->window = sliding > 0 ? window : 0;
  if (sliding > 0) m->sliding = std::move(slides);
  return Status::Ok();
}

// attn_logit_softcapping: a positive number caps; null or 0 does not; absent, Gemma 2 caps
// (transformers' Gemma2Config defaults it to 50.0).
bool ReadsSoftCapping(const Json& root) {
  if (!root.contains("attn_logit_softcapping"))
    return root.contains("model_type") && root["model_type"] == "gemma2";
  const Json& cap = root["attn_logit_softcapping"];
  return cap.is_number() && cap.get<double>() > 0;
}

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// Directories that may hold the shipped models: models/ beside each candidate directory of
// shipped topologies (the source tree's, or share/meshplan/ of an installed copy).
std::vector<std::string> ModelDirCandidates() {
  std::vector<std::string> out;
  for (const std::string& dir : TopologyDirCandidates(ProgramTopologySearch())) {
    const std::string models = (fs::path(dir).parent_path() / "models").string();
    if (std::find(out.begin(), out.end(), models) == out.end()) out.push_back(models);
  }
  return out;
}

std::vector<std::string> ModelNamesIn(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    std::error_code file_ec;
    if (p.extension() == ".json" && fs::is_regular_file(p, file_ec))
      names.push_back(p.stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// The fields the whole training step reads (ModelConfig::hidden_size and after).
Status ReadRestOfLayer(const Reader& r, const Json& root, ModelConfig* m) {
  MESHPLAN_RETURN_IF_ERROR(r.Count("hidden_size", false, &m->hidden_size));
  MESHPLAN_RETURN_IF_ERROR(r.Count("intermediate_size", false, &m->intermediate_size));
  MESHPLAN_RETURN_IF_ERROR(r.Count("vocab_size", false, &m->vocab_size));
  if (r.Has("tie_word_embeddings")) {
    const Json& v = root["tie_word_embeddings"];
    if (!v.is_boolean()) return r.Fail("tie_word_embeddings", "expected true or false");
    m->tied_embeddings = v.get<bool>();
  }
  if (r.Has("model_type") && root["model_type"].is_string()) {
    const std::string type = root["model_type"].get<std::string>();
    for (const char* plain : {"gpt2", "gpt_neox", "gptj", "opt", "bloom", "falcon"})
      if (type == plain) m->gated_mlp = false;
  }
  for (const char* field : {"num_local_experts", "num_experts", "n_routed_experts"}) {
    if (r.Has(field) && root[field].is_number_integer() && root[field].get<int64_t>() > 1)
      m->experts = root[field].get<int64_t>();
  }
  return Status::Ok();
}

}  // namespace

Status ModelConfig::RequireWholeModel() const {
  const std::string& file = name;  // the file's path, or the shipped model's name
  if (experts > 0) {
    return Status::Invalid(
        file + ": a mixture of " + std::to_string(experts) +
        " experts: the whole step models dense layers only (experts' all-to-all and grouped "
        "GEMMs are not modelled); plan its attention without --gpus/--pp");
  }
  const std::pair<const char*, int64_t> needed[] = {{"hidden_size", hidden_size},
                                                    {"intermediate_size", intermediate_size},
                                                    {"vocab_size", vocab_size}};
  for (const auto& [field, value] : needed) {
    if (value == 0) {
      return Status::Invalid(file + ": " + field +
                             ": missing field (the whole training step needs the model's "
                             "hidden_size, intermediate_size and vocab_size)");
    }
  }
  return Status::Ok();
}

WorkloadFields ModelConfig::Fields() const {
  WorkloadFields f;
  f.q_heads = q_heads;
  f.kv_heads = kv_heads;
  f.head_dim = head_dim;
  if (dtype) f.dtype = *dtype;
  return f;
}

std::string ModelConfig::Describe() const {
  std::string s = name + ": " + std::to_string(layers) + " layers, " + std::to_string(q_heads) +
                  "/" + std::to_string(kv_heads) + " heads of " + std::to_string(head_dim);
  if (window_layers > 0) {
    s += ", " + std::to_string(window_layers) + " of them a " + std::to_string(window) +
         "-token window";
  }
  return s;
}

Result<ModelConfig> ParseModelConfig(std::string_view text, const std::string& file) {
  Json root;
  try {
    root = Json::parse(text.begin(), text.end());
  } catch (const Json::parse_error& e) {
    return Status::Invalid(file + ": not JSON (at byte " + std::to_string(e.byte) + ")");
  } catch (const Json::exception& e) {  // e.g. a number beyond a double (found by fuzzing)
    return Status::Invalid(file + ": not JSON meshplan can read (" + std::string(e.what()) + ")");
  }
  if (!root.is_object()) return Status::Invalid(file + ": expected a JSON object");
  const Reader r(root, file);
  MESHPLAN_RETURN_IF_ERROR(RefuseLatentAttention(r));
  ModelConfig m;
  m.name = file;
  m.source = file;
  if (r.Has("_name") && root["_name"].is_string()) m.name = root["_name"].get<std::string>();
  if (r.Has("_source") && root["_source"].is_string())
    m.source = root["_source"].get<std::string>();
  MESHPLAN_RETURN_IF_ERROR(r.Count("num_attention_heads", true, &m.q_heads));
  m.kv_heads = m.q_heads;
  MESHPLAN_RETURN_IF_ERROR(r.Count("num_key_value_heads", false, &m.kv_heads));
  if (m.q_heads % m.kv_heads != 0) {
    return r.Fail("num_key_value_heads", std::to_string(m.kv_heads) +
                                             " does not divide num_attention_heads (" +
                                             std::to_string(m.q_heads) + ")");
  }
  if (r.Has("head_dim")) {
    MESHPLAN_RETURN_IF_ERROR(r.Count("head_dim", false, &m.head_dim));
  } else {
    int64_t hidden = 0;
    if (!r.Has("hidden_size")) return r.Fail("head_dim", "missing field (and no hidden_size)");
    MESHPLAN_RETURN_IF_ERROR(r.Count("hidden_size", true, &hidden));
    if (hidden % m.q_heads != 0) {
      return r.Fail("hidden_size", std::to_string(hidden) +
                                       " is not a multiple of num_attention_heads (" +
                                       std::to_string(m.q_heads) + "), and head_dim is not given");
    }
    m.head_dim = hidden / m.q_heads;
  }
  MESHPLAN_RETURN_IF_ERROR(r.Count("num_hidden_layers", true, &m.layers));
  MESHPLAN_RETURN_IF_ERROR(ReadDType(r, &m.dtype));
  MESHPLAN_RETURN_IF_ERROR(ReadWindows(r, &m));
  MESHPLAN_RETURN_IF_ERROR(ReadRestOfLayer(r, root, &m));
  m.logit_softcapping = ReadsSoftCapping(root);
  return m;
}

bool IsModelName(const std::string& text) {
  const std::string suffix = ".json";
  const bool json = text.size() >= suffix.size() &&
                    text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
  return !text.empty() && text.find('/') == std::string::npos && !json;
}

Result<ModelConfig> LoadModelConfig(const std::string& name_or_path) {
  std::error_code ec;
  std::string path = name_or_path;
  if (IsModelName(name_or_path) && !fs::is_regular_file(name_or_path, ec)) {
    const std::vector<std::string> dirs = ModelDirCandidates();
    auto dir = std::find_if(dirs.begin(), dirs.end(), [](const std::string& d) {
      std::error_code e;
      return fs::is_directory(d, e);
    });
    if (dir == dirs.end()) {
      return Status::NotFound("unknown model '" + name_or_path +
                              "': no directory of shipped models (looked in: " + JoinNames(dirs) +
                              ")");
    }
    path = (fs::path(*dir) / (name_or_path + ".json")).string();
    if (!fs::is_regular_file(path, ec)) {
      const std::vector<std::string> names = ModelNamesIn(*dir);
      return Status::NotFound("unknown model '" + name_or_path + "'" +
                              DidYouMean(name_or_path, names) +
                              ": not a file, and not one of the shipped models in " + *dir + " (" +
                              JoinNames(names) + ")");
    }
  }
  MESHPLAN_ASSIGN_OR_RETURN(auto text, ReadTextFile(path));
  MESHPLAN_ASSIGN_OR_RETURN(auto model, ParseModelConfig(text, path));
  if (model.name == path && IsModelName(name_or_path)) model.name = name_or_path;
  return model;
}

}  // namespace meshplan
