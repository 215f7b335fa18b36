#include "capacity/sweep_file.h"

#include <toml++/toml.h>

#include <filesystem>
#include <optional>
#include <sstream>
#include <system_error>
#include <utility>
#include <vector>

#include "capacity/sweep_lists.h"
#include "core/base/toml_util.h"
#include "core/base/units.h"
#include "core/cluster/topology_catalog.h"
#include "core/workload/model_config.h"

namespace meshplan::capacity {
namespace {

// One of a list key's forms as list text: "8..64", 8, or an array of those.
Result<std::string> ListText(const toml::node& node, const std::string& key,
                             const std::string& source) {
  auto one = [&](const toml::node& n) -> Result<std::string> {
    if (const auto* s = n.as_string()) return s->get();
    if (const auto* i = n.as_integer()) return std::to_string(i->get());
    return Status::Invalid(source + ": " + key +
                           ": expected a count, a range string or an array of those, got " +
                           TomlTypeName(n));
  };
  if (const auto* array = node.as_array()) {
    std::string text;
    for (const toml::node& element : *array) {
      auto t = one(element);
      if (!t.ok()) return t;
      text += (text.empty() ? "" : ",") + *t;
    }
    return text;
  }
  return one(node);
}

// Strings from a comma list string ("a,b") or an array of strings.
Result<std::vector<std::string>> StringList(const toml::node& node, const std::string& key,
                                            const std::string& source) {
  auto fail = [&](const toml::node& n) {
    return Status::Invalid(source + ": " + key +
                           ": expected a string or an array of strings, got " + TomlTypeName(n));
  };
  std::vector<std::string> out;
  if (const auto* s = node.as_string()) {
    std::stringstream in(s->get());
    std::string item;
    while (std::getline(in, item, ',')) {
      if (!item.empty()) out.push_back(item);
    }
    return out;
  }
  const auto* array = node.as_array();
  if (array == nullptr) return fail(node);
  for (const toml::node& element : *array) {
    const auto* s = element.as_string();
    if (s == nullptr) return fail(element);
    out.push_back(s->get());
  }
  return out;
}

// The string at `key` of a sweep file (nullopt when absent). Error: another type, naming the file
// and key.
Result<std::optional<std::string>> StringKey(const toml::table& table, const char* key,
                                             const std::string& path) {
  const toml::node* n = table.get(key);
  if (n == nullptr) return std::optional<std::string>();
  const auto* s = n->as_string();
  if (s == nullptr)
    return Status::Invalid(path + ": " + key + ": expected a string, got " + TomlTypeName(*n));
  return std::optional<std::string>(s->get());
}

// The workload keys of a sweep file, checked so that errors name the file and key.
Status ReadWorkloadKeys(const toml::table& table, const std::string& path, WorkloadFields* fields) {
  auto fail = [&](const std::string& key, const std::string& why) {
    return Status::Invalid(path + ": " + key + ": " + why);
  };
  // Counts: an integer or a "64K"-style string.
  const std::pair<const char*, std::optional<int64_t> WorkloadFields::*> counts[] = {
      {"batch", &WorkloadFields::batch},
      {"heads", &WorkloadFields::q_heads},
      {"kv_heads", &WorkloadFields::kv_heads},
      {"head_dim", &WorkloadFields::head_dim}};
  for (const auto& [key, member] : counts) {
    const toml::node* n = table.get(key);
    if (n == nullptr) continue;
    std::string value;
    if (const auto* i = n->as_integer()) {
      value = std::to_string(i->get());
    } else if (const auto* s = n->as_string()) {
      value = s->get();
    } else {
      return fail(key, "expected a count, got " + TomlTypeName(*n));
    }
    auto parsed = ParseCount(value);
    if (!parsed.ok()) return parsed.status().WithContext(path + ": " + key);
    fields->*member = *parsed;
  }
  // Names: strings, parsed as the flags of the same name parse them.
  auto name = [&](const char* key) { return StringKey(table, key, path); };
  auto parse = [&](const char* key, auto parser, auto* out) -> Status {
    auto text = name(key);
    if (!text.ok()) return text.status();
    if (!*text) return Status::Ok();
    auto value = parser(**text);
    if (!value.ok()) return value.status().WithContext(path + ": " + key);
    *out = std::move(value).value();
    return Status::Ok();
  };
  MESHPLAN_RETURN_IF_ERROR(parse("dtype", ParseDType, &fields->dtype));
  MESHPLAN_RETURN_IF_ERROR(parse("partial_dtype", ParseDType, &fields->partial_dtype));
  MESHPLAN_RETURN_IF_ERROR(parse("mask", ParseMask, &fields->mask));
  return parse("pass", ParsePass, &fields->pass);
}

// The keys every planning command takes as flags (--model, --dp, --framework, --seq-round,
// --attention-kernel, --step-overhead-ms), with the flags' parsers.
Status ReadPlanningKeys(const toml::table& table, const std::string& path,
                        SweepSettings* settings) {
  auto fail = [&](const std::string& key, const std::string& why) {
    return Status::Invalid(path + ": " + key + ": " + why);
  };
  auto text = [&](const char* key) { return StringKey(table, key, path); };
  MESHPLAN_ASSIGN_OR_RETURN(auto model, text("model"));
  if (model) {
    auto config = LoadModelConfig(*model);
    if (!config.ok()) return config.status().WithContext(path + ": model");
    // The model's heads, head dim and dtype, under the file's own workload keys.
    WorkloadFields fields = config->Fields();
    fields.Overlay(settings->workload);
    settings->workload = fields;
    settings->workload_source = path;
    settings->model = std::move(config).value();
  }
  MESHPLAN_ASSIGN_OR_RETURN(auto framework, text("framework"));
  if (framework) {
    auto parsed = planner::ParseFramework(*framework);
    if (!parsed.ok()) return parsed.status().WithContext(path + ": framework");
    settings->framework = *parsed;
  }
  MESHPLAN_ASSIGN_OR_RETURN(auto rounding, text("seq_round"));
  if (rounding) {
    if (*rounding != "up" && *rounding != "down") return fail("seq_round", "expected up or down");
    settings->seq_rounding =
        *rounding == "up" ? planner::SeqRounding::kUp : planner::SeqRounding::kDown;
  }
  MESHPLAN_ASSIGN_OR_RETURN(auto kernel, text("attention_kernel"));
  if (kernel) settings->attention_kernel = *kernel;
  if (const toml::node* n = table.get("dp")) {
    const auto* i = n->as_integer();
    if (i == nullptr || i->get() < 1)
      return fail("dp", "expected a whole number of replicas (1 or more)");
    settings->dp = i->get();
  }
  if (const toml::node* n = table.get("step_overhead_ms")) {
    const auto value = n->value<double>();
    if (!value) return fail("step_overhead_ms", "expected a number, got " + TomlTypeName(*n));
    settings->step_overhead_ms = *value;
  }
  return Status::Ok();
}

}  // namespace

Result<SweepSettings> ReadSweepFile(const std::string& path) {
  MESHPLAN_ASSIGN_OR_RETURN(auto text, ReadTextFile(path));
  return ParseSweepToml(text, path);
}

Result<SweepSettings> ParseSweepToml(std::string_view text, const std::string& path) {
  MESHPLAN_ASSIGN_OR_RETURN(auto doc, ParseTomlDocument(text, path));
  const toml::table& table = doc;
  MESHPLAN_RETURN_IF_ERROR(CheckTomlKeys(
      table, "", {"topologies",      "gpus",  "tp",        "seq",         "schemes",
                  "batch",           "heads", "kv_heads",  "head_dim",    "dtype",
                  "partial_dtype",   "mask",  "pass",      "reserve_gib", "simulate",
                  "model",           "dp",    "framework", "seq_round",   "attention_kernel",
                  "step_overhead_ms"},
      path));
  auto fail = [&](const std::string& key, const std::string& why) {
    return Status::Invalid(path + ": " + key + ": " + why);
  };
  SweepSettings settings;
  if (const toml::node* n = table.get("topologies")) {
    MESHPLAN_ASSIGN_OR_RETURN(auto names, StringList(*n, "topologies", path));
    const std::filesystem::path dir = std::filesystem::path(path).parent_path();
    settings.topology_files.emplace();
    for (const std::string& name : names) {
      // Relative paths are relative to this file; a shipped cluster's name (no '/', no ".toml")
      // stays a name unless a file of that name lies beside this one.
      const std::filesystem::path p(name);
      std::error_code ec;
      const bool keep = p.is_absolute() || dir.empty() ||
                        (IsTopologyName(name) && !std::filesystem::is_regular_file(dir / p, ec));
      settings.topology_files->push_back(keep ? name : (dir / p).string());
    }
  }
  for (const char* key : {"gpus", "seq", "tp"}) {
    const toml::node* n = table.get(key);
    if (n == nullptr) continue;
    MESHPLAN_ASSIGN_OR_RETURN(auto list_text, ListText(*n, key, path));
    MESHPLAN_ASSIGN_OR_RETURN(auto values, ParseCountList(list_text, path + ": " + key));
    const std::string k(key);
    (k == "gpus" ? settings.gpus : k == "seq" ? settings.seq_lens : settings.tps) = values;
  }
  if (const toml::node* n = table.get("schemes")) {
    MESHPLAN_ASSIGN_OR_RETURN(auto names, StringList(*n, "schemes", path));
    auto schemes = ParseSchemeList(names, path + ": schemes");
    if (!schemes.ok()) return schemes.status();
    settings.schemes = *schemes;
  }
  MESHPLAN_RETURN_IF_ERROR(ReadWorkloadKeys(table, path, &settings.workload));
  for (const char* key : {"seq", "batch", "heads", "kv_heads", "head_dim", "dtype", "partial_dtype",
                          "mask", "pass"}) {
    if (table.get(key) != nullptr) settings.workload_source = path;
  }
  if (const toml::node* n = table.get("reserve_gib")) {
    double value = 0;
    if (const auto* i = n->as_integer()) {
      value = static_cast<double>(i->get());
    } else if (const auto* f = n->as_floating_point()) {
      value = f->get();
    } else {
      return fail("reserve_gib", "expected a number, got " + TomlTypeName(*n));
    }
    if (Status st = CheckReserveGiB(value); !st.ok()) return fail("reserve_gib", st.message());
    settings.reserved_memory_bytes = value * kGiB;
  }
  MESHPLAN_RETURN_IF_ERROR(ReadPlanningKeys(table, path, &settings));
  if (const toml::node* n = table.get("simulate")) {
    const auto* b = n->as_boolean();
    if (b == nullptr) return fail("simulate", "expected true or false, got " + TomlTypeName(*n));
    settings.simulate = b->get();
  }
  return settings;
}

}  // namespace meshplan::capacity
