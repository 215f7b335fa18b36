// Plan files: Plan <-> TOML. The format is specified in docs/plan-format.md; keep the two in step.
//
// Like topology files, plan files are read strictly: unknown keys and wrong types are errors, so a
// hand-edited plan never silently runs with a default in place of what was meant. Every error is
// one line "SOURCE: KEY: REASON".
#include "planner/plan_file.h"

#include <toml++/toml.h>

#include <cstdio>
#include <fstream>
#include <initializer_list>
#include <optional>
#include <sstream>

#include "core/base/checked_math.h"
#include "core/base/toml_util.h"
#include "core/cluster/topology.h"
#include "planner/schemes/registry.h"

namespace meshplan::planner {
namespace {

// Typed access to one table of the plan; `prefix` is the table's key ("workload"), "" at the top.
class TableReader {
 public:
  TableReader(const toml::table& table, std::string prefix, const std::string& source)
      : table_(table), prefix_(std::move(prefix)), source_(source) {}

  std::string Key(std::string_view name) const {
    return prefix_.empty() ? std::string(name) : prefix_ + "." + std::string(name);
  }
  Status Fail(const std::string& key, const std::string& reason) const {
    return Status::Invalid(source_ + ": " + key + ": " + reason);
  }
  Status CheckKeys(std::initializer_list<std::string_view> allowed) const {
    return CheckTomlKeys(table_, prefix_, allowed, source_);
  }
  // nullptr when absent; absent and required is an error.
  Result<const toml::node*> Find(std::string_view name, bool required) const {
    const toml::node* node = table_.get(name);
    if (node == nullptr && required) return Fail(Key(name), "missing required key");
    return node;
  }
  // Absent optional keys leave *out unchanged.
  Status Integer(std::string_view name, bool required, int64_t* out) const {
    auto node = Find(name, required);
    if (!node.ok()) return node.status();
    if (*node == nullptr) return Status::Ok();
    const auto* i = (*node)->as_integer();
    if (i == nullptr) return Fail(Key(name), "expected an integer, got " + TomlTypeName(**node));
    *out = i->get();
    return Status::Ok();
  }
  Status String(std::string_view name, bool required, std::string* out) const {
    auto node = Find(name, required);
    if (!node.ok()) return node.status();
    if (*node == nullptr) return Status::Ok();
    const auto* s = (*node)->as_string();
    if (s == nullptr) return Fail(Key(name), "expected a string, got " + TomlTypeName(**node));
    *out = s->get();
    return Status::Ok();
  }
  Status Bool(std::string_view name, bool required, bool* out) const {
    auto node = Find(name, required);
    if (!node.ok()) return node.status();
    if (*node == nullptr) return Status::Ok();
    const auto* b = (*node)->as_boolean();
    if (b == nullptr) return Fail(Key(name), "expected a boolean, got " + TomlTypeName(**node));
    *out = b->get();
    return Status::Ok();
  }
  // A string turned into an enum by one of core's Parse* functions; its message is the reason.
  template <typename T, typename ParseFn>
  Status Enum(std::string_view name, bool required, ParseFn parse, T* out) const {
    std::string text;
    bool present = table_.get(name) != nullptr;
    MESHPLAN_RETURN_IF_ERROR(String(name, required, &text));
    if (!present) return Status::Ok();
    auto parsed = parse(text);
    if (!parsed.ok()) return Fail(Key(name), parsed.status().message());
    *out = *parsed;
    return Status::Ok();
  }
  // A sub-table; nullptr when absent and optional.
  Result<const toml::table*> Table(std::string_view name, bool required) const {
    auto node = Find(name, required);
    if (!node.ok()) return node.status();
    if (*node == nullptr) return static_cast<const toml::table*>(nullptr);
    if (!(*node)->is_table()) {
      return Fail(Key(name), "expected a table ([" + Key(name) + "]), got " + TomlTypeName(**node));
    }
    return (*node)->as_table();
  }

 private:
  const toml::table& table_;
  std::string prefix_;
  const std::string& source_;
};

Status ReadWorkload(const TableReader& r, Workload* w) {
  MESHPLAN_RETURN_IF_ERROR(
      r.CheckKeys({"batch", "seq", "heads", "kv_heads", "head_dim", "dtype", "partial_dtype",
                   "mask", "document_lengths", "documents_source", "pass"}));
  MESHPLAN_RETURN_IF_ERROR(r.Integer("batch", false, &w->batch));
  MESHPLAN_RETURN_IF_ERROR(r.Integer("seq", true, &w->seq_len));
  MESHPLAN_RETURN_IF_ERROR(r.Integer("heads", true, &w->q_heads));
  MESHPLAN_RETURN_IF_ERROR(r.Integer("kv_heads", true, &w->kv_heads));
  MESHPLAN_RETURN_IF_ERROR(r.Integer("head_dim", true, &w->head_dim));
  MESHPLAN_RETURN_IF_ERROR(r.Enum("dtype", false, ParseDType, &w->dtype));
  MESHPLAN_RETURN_IF_ERROR(r.Enum("partial_dtype", false, ParseDType, &w->partial_dtype));
  MESHPLAN_RETURN_IF_ERROR(r.Enum("pass", false, ParsePass, &w->pass));

  std::string mask = "causal";
  MESHPLAN_RETURN_IF_ERROR(r.String("mask", false, &mask));
  auto lengths = r.Find("document_lengths", false);
  if (!lengths.ok()) return lengths.status();
  const bool has_source = r.Find("documents_source", false).value() != nullptr;
  if (mask == "docs" || mask == "docs-full") {
    // The lengths live in the plan itself, so a plan never depends on a side file.
    if (*lengths == nullptr) {
      return r.Fail(r.Key("document_lengths"),
                    "missing required key (mask = \"" + mask + "\" needs it)");
    }
    const toml::array* array = (*lengths)->as_array();
    if (array == nullptr) {
      return r.Fail(r.Key("document_lengths"),
                    "expected an array of integers, got " + TomlTypeName(**lengths));
    }
    std::vector<int64_t> values;
    values.reserve(array->size());
    for (size_t i = 0; i < array->size(); ++i) {
      const std::string key = r.Key("document_lengths") + "[" + std::to_string(i) + "]";
      const auto* v = (*array)[i].as_integer();
      if (v == nullptr) return r.Fail(key, "expected an integer, got " + TomlTypeName((*array)[i]));
      if (v->get() <= 0) return r.Fail(key, "must be positive, got " + std::to_string(v->get()));
      values.push_back(v->get());
    }
    if (values.empty()) return r.Fail(r.Key("document_lengths"), "needs at least one document");
    w->mask = Mask::Documents(std::move(values), mask == "docs-full");
    MESHPLAN_RETURN_IF_ERROR(r.String("documents_source", false, &w->mask.documents_source));
    return Status::Ok();
  }
  if (mask.rfind("docs", 0) == 0) {  // docs:FILE, docs-sampled:SPEC, ...
    return r.Fail(
        r.Key("mask"),
        "a plan stores document lengths inline: use mask = \"docs\" or \"docs-full\" with "
        "document_lengths = [...]");
  }
  if (*lengths != nullptr)
    return r.Fail(r.Key("document_lengths"), "only allowed with mask = \"docs\" or \"docs-full\"");
  if (has_source) {
    return r.Fail(r.Key("documents_source"), "only allowed with mask = \"docs\" or \"docs-full\"");
  }
  auto parsed = ParseMask(mask);
  if (!parsed.ok()) return r.Fail(r.Key("mask"), parsed.status().message());
  w->mask = std::move(parsed).value();
  return Status::Ok();
}

Status ReadScheme(const TableReader& r, SchemeParams* s) {
  MESHPLAN_RETURN_IF_ERROR(r.CheckKeys({"name", "layout", "ulysses", "ring", "window", "tile_a",
                                        "tile_b", "cache_forward", "reduce_chain", "placement"}));
  MESHPLAN_RETURN_IF_ERROR(r.Enum("name", true, ParseScheme, &s->scheme));
  MESHPLAN_RETURN_IF_ERROR(r.Enum("layout", false, ParseLayout, &s->layout));
  MESHPLAN_RETURN_IF_ERROR(r.Integer("ulysses", false, &s->ulysses));
  MESHPLAN_RETURN_IF_ERROR(r.Integer("ring", false, &s->ring));
  MESHPLAN_RETURN_IF_ERROR(r.Integer("window", false, &s->window));
  MESHPLAN_RETURN_IF_ERROR(r.Integer("tile_a", false, &s->tile_a));
  MESHPLAN_RETURN_IF_ERROR(r.Integer("tile_b", false, &s->tile_b));
  MESHPLAN_RETURN_IF_ERROR(r.Bool("cache_forward", false, &s->cache_forward));
  MESHPLAN_RETURN_IF_ERROR(r.Enum("reduce_chain", false, ParseReduceChain, &s->reduce_chain));
  for (auto [name, value] : {std::pair<const char*, int64_t>{"ulysses", s->ulysses},
                             {"ring", s->ring},
                             {"window", s->window},
                             {"tile_a", s->tile_a},
                             {"tile_b", s->tile_b}}) {
    if (value < 1) return r.Fail(r.Key(name), "must be at least 1, got " + std::to_string(value));
  }
  auto placement = r.Find("placement", false);
  if (!placement.ok()) return placement.status();
  if (*placement == nullptr) {
    s->placement = CanonicalPlacement(RankDims(*s));
    return Status::Ok();
  }
  const toml::array* array = (*placement)->as_array();
  if (array == nullptr) {
    return r.Fail(r.Key("placement"),
                  "expected an array of strings, got " + TomlTypeName(**placement));
  }
  s->placement.clear();
  for (size_t i = 0; i < array->size(); ++i) {
    const auto* name = (*array)[i].as_string();
    if (name == nullptr) {
      return r.Fail(r.Key("placement") + "[" + std::to_string(i) + "]",
                    "expected a string, got " + TomlTypeName((*array)[i]));
    }
    s->placement.push_back(name->get());
  }
  return Status::Ok();
}

// Checks that need the whole plan: the workload, the scheme against the workload, the placement
// and the rank count. Keys in messages are the plan file's keys.
Status CheckPlan(const Plan& plan, const std::string& source) {
  auto fail = [&](const std::string& key, const std::string& reason) {
    return Status::Invalid(source + ": " + key + ": " + reason);
  };
  const Status workload = plan.workload.Validate();
  if (!workload.ok()) return fail("workload", workload.message());
  const SchemeParams& s = plan.params;
  // The scheme's own checks (its unit's CheckParams): ReadScheme parsed a registered name.
  if (auto problem = FindStrategy(s.scheme)->CheckParams(s, plan.workload)) {
    return fail("scheme." + problem->key, problem->reason);
  }
  const std::vector<RankDim> dims = RankDims(s);
  const Status placement = ValidatePlacement(dims, s.placement);
  if (!placement.ok()) return fail("scheme.placement", placement.message());
  // Checked: the degrees come from the file, and their product may not fit in int64.
  int64_t ranks = 1;
  for (const RankDim& d : dims) {
    const std::optional<int64_t> next = CheckedMultiply(ranks, d.size);
    if (!next || *next > kMaxTopologyGpus) {
      return fail("scheme", "the " + std::string(SchemeName(s.scheme)) +
                                " scheme's degrees multiply to more than " +
                                "the 10 million GPUs a topology may have");
    }
    ranks = *next;
  }
  if (ranks != plan.num_gpus) {
    return fail("topology.gpus", "the " + std::string(SchemeName(s.scheme)) + " scheme has " +
                                     std::to_string(ranks) + " ranks but the plan is for " +
                                     std::to_string(plan.num_gpus) + " GPUs");
  }
  return Status::Ok();
}

Result<Plan> FromTable(const toml::table& root, const std::string& source) {
  TableReader top(root, "", source);
  Plan plan;
  // The version comes first: a newer file's unknown keys should be reported as a version problem.
  int64_t version = 0;
  MESHPLAN_RETURN_IF_ERROR(top.Integer("schema_version", true, &version));
  if (version != kPlanSchemaVersion) {
    return top.Fail("schema_version", "unsupported plan schema version " + std::to_string(version) +
                                          " (this meshplan reads version " +
                                          std::to_string(kPlanSchemaVersion) + ")");
  }
  plan.schema_version = static_cast<int>(version);
  MESHPLAN_RETURN_IF_ERROR(
      top.CheckKeys({"schema_version", "workload", "topology", "scheme", "estimate"}));

  auto workload = top.Table("workload", true);
  if (!workload.ok()) return workload.status();
  MESHPLAN_RETURN_IF_ERROR(
      ReadWorkload(TableReader(**workload, "workload", source), &plan.workload));

  auto topology = top.Table("topology", true);
  if (!topology.ok()) return topology.status();
  TableReader t(**topology, "topology", source);
  MESHPLAN_RETURN_IF_ERROR(t.CheckKeys({"name", "source", "gpus", "attention_kernel", "tp", "dp"}));
  MESHPLAN_RETURN_IF_ERROR(t.String("name", true, &plan.topology_name));
  MESHPLAN_RETURN_IF_ERROR(t.String("source", false, &plan.topology_source));
  MESHPLAN_RETURN_IF_ERROR(t.String("attention_kernel", false, &plan.attention_kernel));
  if (!plan.attention_kernel.empty() && !IsAttentionLibrary(plan.attention_kernel)) {
    return t.Fail("topology.attention_kernel", "unknown attention library '" +
                                                   plan.attention_kernel +
                                                   "' (expected fa2, fa3, cudnn or own)");
  }
  MESHPLAN_RETURN_IF_ERROR(t.Integer("gpus", true, &plan.num_gpus));
  if (plan.num_gpus < 1) return t.Fail("topology.gpus", "must be at least 1");
  if (plan.num_gpus > kMaxTopologyGpus) return t.Fail("topology.gpus", "must be at most 10000000");
  MESHPLAN_RETURN_IF_ERROR(t.Integer("tp", false, &plan.tp));
  MESHPLAN_RETURN_IF_ERROR(t.Integer("dp", false, &plan.dp));
  if (plan.tp < 1 || plan.tp > kMaxTopologyGpus) return t.Fail("topology.tp", "must be at least 1");
  if (plan.dp < 1 || plan.dp > kMaxTopologyGpus) return t.Fail("topology.dp", "must be at least 1");

  auto scheme = top.Table("scheme", true);
  if (!scheme.ok()) return scheme.status();
  MESHPLAN_RETURN_IF_ERROR(ReadScheme(TableReader(**scheme, "scheme", source), &plan.params));

  // [estimate] is informational (the planner's prediction when the plan was made): any table.
  if (auto estimate = top.Table("estimate", false); !estimate.ok()) return estimate.status();

  MESHPLAN_RETURN_IF_ERROR(CheckPlan(plan, source));
  return plan;
}

// True when the first line that is not blank or a comment opens the [estimate] table.
bool StartsWithEstimateHeader(const std::string& text) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    const size_t start = line.find_first_not_of(" \t\r");
    if (start == std::string::npos || line[start] == '#') continue;
    return line.compare(start, 10, "[estimate]") == 0 || line.compare(start, 10, "[estimate.") == 0;
  }
  return false;
}

}  // namespace

std::string PlanToToml(const Plan& plan, const std::string& estimate_toml) {
  const Workload& w = plan.workload;
  const SchemeParams& s = plan.params;
  std::ostringstream out;
  out << "# meshplan plan (format: docs/plan-format.md)\n";
  out << "schema_version = " << plan.schema_version << "\n";

  out << "\n[workload]\n";
  out << "batch = " << w.batch << "\n";
  out << "seq = " << w.seq_len << "\n";
  out << "heads = " << w.q_heads << "\n";
  out << "kv_heads = " << w.kv_heads << "\n";
  out << "head_dim = " << w.head_dim << "\n";
  out << "dtype = " << TomlQuote(DTypeName(w.dtype)) << "\n";
  out << "partial_dtype = " << TomlQuote(DTypeName(w.partial_dtype)) << "\n";
  switch (w.mask.kind) {
    case MaskKind::kFull:
    case MaskKind::kCausal:
      out << "mask = " << TomlQuote(w.mask.ToString()) << "\n";
      break;
    case MaskKind::kWindow:  // exact token count, not the "4K" display form
      out << "mask = " << TomlQuote("window:" + std::to_string(w.mask.window)) << "\n";
      break;
    case MaskKind::kPrefix:  // exact token count
      out << "mask = " << TomlQuote("prefix:" + std::to_string(w.mask.prefix)) << "\n";
      break;
    case MaskKind::kDocuments:
    case MaskKind::kDocumentsFull:
      out << "mask = " << (w.mask.kind == MaskKind::kDocuments ? "\"docs\"" : "\"docs-full\"")
          << "\n";
      if (w.mask.sampler) {  // the lengths below are the ones drawn; the file never re-draws them
        out << "documents_source = " << TomlQuote("sampled " + w.mask.sampler->spec) << "\n";
      } else if (!w.mask.documents_source.empty()) {
        out << "documents_source = " << TomlQuote(w.mask.documents_source) << "\n";
      }
      out << "document_lengths = [";
      for (size_t i = 0; i < w.mask.document_lengths.size(); ++i) {
        out << (i % 16 == 0 ? "\n  " : " ") << w.mask.document_lengths[i] << ",";
      }
      out << "\n]\n";
      break;
  }
  out << "pass = " << TomlQuote(PassName(w.pass)) << "\n";

  out << "\n[topology]\n";
  out << "name = " << TomlQuote(plan.topology_name) << "\n";
  out << "source = " << TomlQuote(plan.topology_source) << "\n";
  if (!plan.attention_kernel.empty())
    out << "attention_kernel = " << TomlQuote(plan.attention_kernel) << "\n";
  out << "gpus = " << plan.num_gpus << "\n";
  if (plan.tp != 1) out << "tp = " << plan.tp << "\n";
  if (plan.dp != 1) out << "dp = " << plan.dp << "\n";

  out << "\n[scheme]\n";
  out << "name = " << TomlQuote(SchemeName(s.scheme)) << "\n";
  out << "layout = " << TomlQuote(LayoutName(s.layout)) << "\n";
  out << "ulysses = " << s.ulysses << "\n";
  out << "ring = " << s.ring << "\n";
  out << "window = " << s.window << "\n";
  out << "tile_a = " << s.tile_a << "\n";
  out << "tile_b = " << s.tile_b << "\n";
  out << "cache_forward = " << (s.cache_forward ? "true" : "false") << "\n";
  out << "reduce_chain = " << TomlQuote(ReduceChainName(s.reduce_chain)) << "\n";
  out << "placement = [";
  for (size_t i = 0; i < s.placement.size(); ++i)
    out << (i ? ", " : "") << TomlQuote(s.placement[i]);
  out << "]\n";

  if (!estimate_toml.empty()) {
    out << "\n";
    if (!StartsWithEstimateHeader(estimate_toml)) out << "[estimate]\n";
    out << estimate_toml;
    if (estimate_toml.back() != '\n') out << "\n";
  }
  return out.str();
}

Result<Plan> ParsePlanToml(std::string_view text, const std::string& source) {
  MESHPLAN_ASSIGN_OR_RETURN(auto root, ParseTomlDocument(text, source));
  return FromTable(root, source);
}

Result<Plan> LoadPlanFile(const std::string& path) {
  MESHPLAN_ASSIGN_OR_RETURN(auto text, ReadTextFile(path));
  return ParsePlanToml(text, path);
}

}  // namespace meshplan::planner
