// `meshplan sweep`: the planner (and optionally the simulator) over GPU counts, sequence lengths,
// topologies and schemes, one CSV/JSON row per point and scheme (docs/capacity-planning.md).
#include <toml++/toml.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/atomic_file.h"
#include "core/toml_util.h"
#include "core/topology_toml.h"
#include "core/units.h"
#include "report/charts.h"
#include "report/sweep.h"
#include "tools/cli_common.h"
#include "tools/commands.h"

namespace meshplan::tools {
namespace {

// A list expands to at most this many values ("1..1G:+1" is a typo, not a sweep).
constexpr size_t kMaxListValues = 100000;

// Parses a list of counts: comma-separated items, each a count ("8", "128K", "2^20") or a range
// "LO..HI" (doubling from LO while <= HI), "LO..HI:+STEP" (arithmetic) or "LO..HI:*F" (factor F).
// Duplicates are dropped (first occurrence kept). `what` names the flag or key in errors.
Result<std::vector<int64_t>> ParseCountList(const std::string& text, const std::string& what) {
  auto fail = [&](const std::string& why) { return Status::Invalid(what + ": " + why); };
  std::vector<int64_t> out;
  auto add = [&](int64_t v) {
    if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  };
  if (text.find_first_not_of(" \t") == std::string::npos) return fail("empty list");
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    std::string item = text.substr(start, comma - start);
    start = comma + 1;
    const size_t first = item.find_first_not_of(" \t"), last = item.find_last_not_of(" \t");
    if (first == std::string::npos) return fail("empty item in list '" + text + "'");
    item = item.substr(first, last - first + 1);
    const size_t dots = item.find("..");
    if (dots == std::string::npos) {
      auto value = ParseCount(item);
      if (!value.ok()) return value.status().WithContext(what);
      add(*value);
      continue;
    }
    std::string lo_text = item.substr(0, dots), hi_text = item.substr(dots + 2), step_text;
    const size_t colon = hi_text.find(':');
    if (colon != std::string::npos) {
      step_text = hi_text.substr(colon + 1);
      hi_text = hi_text.substr(0, colon);
    }
    if (lo_text.empty() || hi_text.empty()) {
      return fail("range '" + item + "' needs both ends (LO..HI)");
    }
    auto lo = ParseCount(lo_text);
    if (!lo.ok()) return lo.status().WithContext(what + ": range '" + item + "'");
    auto hi = ParseCount(hi_text);
    if (!hi.ok()) return hi.status().WithContext(what + ": range '" + item + "'");
    if (*hi < *lo) {
      return fail("range '" + item + "' is reversed (" + std::to_string(*lo) + " > " + std::to_string(*hi) + ")");
    }
    bool additive = false;
    int64_t step = 2;  // doubling by default
    if (colon != std::string::npos) {
      if (step_text.size() < 2 || (step_text[0] != '+' && step_text[0] != '*')) {
        return fail("range '" + item + "': step must be :+N (add N) or :*N (multiply by N)");
      }
      additive = step_text[0] == '+';
      auto s = ParseCount(step_text.substr(1));
      if (!s.ok()) return s.status().WithContext(what + ": range '" + item + "': step");
      step = *s;
      if (!additive && step < 2) return fail("range '" + item + "': factor must be at least 2");
    }
    for (int64_t v = *lo; v <= *hi;) {
      add(v);
      if (out.size() > kMaxListValues) {
        return fail("range '" + item + "' has more than " + std::to_string(kMaxListValues) + " values");
      }
      if (additive ? v > std::numeric_limits<int64_t>::max() - step : v > std::numeric_limits<int64_t>::max() / step) {
        break;
      }
      v = additive ? v + step : v * step;
    }
  }
  return out;
}

Result<std::vector<Scheme>> ParseSchemeList(const std::vector<std::string>& names, const std::string& what) {
  std::vector<Scheme> out;
  for (const std::string& name : names) {
    auto scheme = ParseScheme(name);
    if (!scheme.ok()) return scheme.status().WithContext(what);
    if (std::find(out.begin(), out.end(), *scheme) == out.end()) out.push_back(*scheme);
  }
  if (out.empty()) return Status::Invalid(what + ": empty list");
  return out;
}

struct SweepFlags {
  std::vector<std::string> topologies;  // repeatable and comma-separated
  std::string gpus;
  std::string schemes;
  WorkloadFlags workload;  // --seq holds a list here
  double reserve_gib = 0;
  bool simulate = false;
  std::string format = "csv";
  std::string out;
  std::string sweep_file;
  std::string plot;  // directory for the SVG charts
  bool quiet = false;
};

// What to sweep after merging the sweep file (if any) with the command line (which wins).
struct SweepSettings {
  std::vector<std::string> topologies;  // empty: the built-in cluster
  std::vector<int64_t> gpus;            // empty: each topology's own size
  std::vector<int64_t> seq;
  std::vector<Scheme> schemes;          // empty: all
  WorkloadFlags workload;               // seq unused
  double reserve_gib = 0;
  bool simulate = false;
};

// One of `value`'s forms as list text: "8..64", 8, or an array of those.
Result<std::string> ListText(const toml::node& node, const std::string& key, const std::string& source) {
  auto one = [&](const toml::node& n) -> Result<std::string> {
    if (const auto* s = n.as_string()) return s->get();
    if (const auto* i = n.as_integer()) return std::to_string(i->get());
    return Status::Invalid(source + ": " + key + ": expected a count, a range string or an array of those, got " +
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

// Strings from a string or an array of strings.
Result<std::vector<std::string>> StringList(const toml::node& node, const std::string& key, const std::string& source) {
  auto fail = [&](const toml::node& n) {
    return Status::Invalid(source + ": " + key + ": expected a string or an array of strings, got " + TomlTypeName(n));
  };
  std::vector<std::string> out;
  if (const auto* s = node.as_string()) return SplitList(s->get());
  const auto* array = node.as_array();
  if (array == nullptr) return fail(node);
  for (const toml::node& element : *array) {
    const auto* s = element.as_string();
    if (s == nullptr) return fail(element);
    out.push_back(s->get());
  }
  return out;
}

// Reads a sweep file into `settings` (docs/capacity-planning.md). Topology paths are relative to
// the file's directory; every error is one line "FILE: KEY: reason".
Status ReadSweepFile(const std::string& path, SweepSettings* settings) {
  auto text = ReadTextFile(path);
  if (!text.ok()) return text.status();
  auto doc = ParseTomlDocument(*text, path);
  if (!doc.ok()) return doc.status();
  const toml::table& table = *doc;
  MESHPLAN_RETURN_IF_ERROR(CheckTomlKeys(table,
                                         "",
                                         {"topologies", "gpus", "seq", "schemes", "batch", "heads", "kv_heads",
                                          "head_dim", "dtype", "partial_dtype", "mask", "pass", "reserve_gib",
                                          "simulate"},
                                         path));
  auto fail = [&](const std::string& key, const std::string& why) {
    return Status::Invalid(path + ": " + key + ": " + why);
  };
  if (const toml::node* n = table.get("topologies")) {
    auto names = StringList(*n, "topologies", path);
    if (!names.ok()) return names.status();
    const std::filesystem::path dir = std::filesystem::path(path).parent_path();
    settings->topologies.clear();
    for (const std::string& name : *names) {
      const std::filesystem::path p(name);
      settings->topologies.push_back(p.is_absolute() || dir.empty() ? name : (dir / p).string());
    }
  }
  for (const char* key : {"gpus", "seq"}) {
    const toml::node* n = table.get(key);
    if (n == nullptr) continue;
    auto list_text = ListText(*n, key, path);
    if (!list_text.ok()) return list_text.status();
    auto values = ParseCountList(*list_text, path + ": " + key);
    if (!values.ok()) return values.status();
    (std::string(key) == "gpus" ? settings->gpus : settings->seq) = *values;
  }
  if (const toml::node* n = table.get("schemes")) {
    auto names = StringList(*n, "schemes", path);
    if (!names.ok()) return names.status();
    auto schemes = ParseSchemeList(*names, path + ": schemes");
    if (!schemes.ok()) return schemes.status();
    settings->schemes = *schemes;
  }
  // Workload keys: counts (integer or "64K"-style string) and names; checked here so that errors
  // name the file and key, then handed to the same builder as the flags.
  const std::pair<const char*, std::string WorkloadFlags::*> counts[] = {
      {"batch", &WorkloadFlags::batch},
      {"heads", &WorkloadFlags::heads},
      {"kv_heads", &WorkloadFlags::kv_heads},
      {"head_dim", &WorkloadFlags::head_dim}};
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
    settings->workload.*member = value;
  }
  const std::pair<const char*, std::string WorkloadFlags::*> names[] = {
      {"dtype", &WorkloadFlags::dtype},
      {"partial_dtype", &WorkloadFlags::partial_dtype},
      {"mask", &WorkloadFlags::mask},
      {"pass", &WorkloadFlags::pass}};
  for (const auto& [key, member] : names) {
    const toml::node* n = table.get(key);
    if (n == nullptr) continue;
    const auto* s = n->as_string();
    if (s == nullptr) return fail(key, "expected a string, got " + TomlTypeName(*n));
    settings->workload.*member = s->get();
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
    if (!(value >= 0)) return fail("reserve_gib", "must not be negative");
    settings->reserve_gib = value;
  }
  if (const toml::node* n = table.get("simulate")) {
    const auto* b = n->as_boolean();
    if (b == nullptr) return fail("simulate", "expected true or false, got " + TomlTypeName(*n));
    settings->simulate = b->get();
  }
  return Status::Ok();
}

// The sweep file (if any), then every flag given on the command line.
Result<SweepSettings> MergeSettings(const SweepFlags& flags, const CLI::App& cmd) {
  SweepSettings s;
  s.seq = {int64_t{1} << 20};  // --seq's default, 1M
  if (!flags.sweep_file.empty()) MESHPLAN_RETURN_IF_ERROR(ReadSweepFile(flags.sweep_file, &s));
  auto given = [&](const char* flag) { return cmd.count(flag) > 0; };
  if (given("--topology")) s.topologies = flags.topologies;
  if (given("--gpus")) {
    auto gpus = ParseCountList(flags.gpus, "--gpus");
    if (!gpus.ok()) return gpus.status();
    s.gpus = *gpus;
  }
  if (given("--seq")) {
    auto seq = ParseCountList(flags.workload.seq, "--seq");
    if (!seq.ok()) return seq.status();
    s.seq = *seq;
  }
  if (given("--schemes")) {
    auto schemes = ParseSchemeList(SplitList(flags.schemes), "--schemes");
    if (!schemes.ok()) return schemes.status();
    s.schemes = *schemes;
  }
  const std::pair<const char*, std::string WorkloadFlags::*> workload_flags[] = {
      {"--batch", &WorkloadFlags::batch},       {"--heads", &WorkloadFlags::heads},
      {"--kv-heads", &WorkloadFlags::kv_heads}, {"--head-dim", &WorkloadFlags::head_dim},
      {"--dtype", &WorkloadFlags::dtype},       {"--partial-dtype", &WorkloadFlags::partial_dtype},
      {"--mask", &WorkloadFlags::mask},         {"--pass", &WorkloadFlags::pass}};
  for (const auto& [flag, member] : workload_flags) {
    if (given(flag)) s.workload.*member = flags.workload.*member;
  }
  if (given("--reserve-gib")) {
    if (flags.reserve_gib < 0) return Status::Invalid("--reserve-gib: must not be negative");
    s.reserve_gib = flags.reserve_gib;
  }
  if (given("--simulate")) s.simulate = flags.simulate;
  return s;
}

// Writes the rows where the flags say (stdout or --out); the place to add more outputs.
Status WriteSweepOutputs(const SweepFlags& flags, const std::vector<report::SweepRow>& rows) {
  const std::string text = flags.format == "json" ? report::SweepJson(rows) : report::SweepCsv(rows);
  if (flags.out.empty()) {
    std::fputs(text.c_str(), stdout);
    return Status::Ok();
  }
  MESHPLAN_RETURN_IF_ERROR(WriteFileAtomically(flags.out, text));
  if (!flags.quiet) std::fprintf(stderr, "meshplan: wrote %zu rows to %s\n", rows.size(), flags.out.c_str());
  return Status::Ok();
}

int RunSweepCommand(const SweepFlags& flags, const CLI::App& cmd) {
  if (Status st = CheckFormat(flags.format, {"csv", "json"}); !st.ok()) return ReportError(st);
  auto settings = MergeSettings(flags, cmd);
  if (!settings.ok()) return ReportError(settings.status());

  report::SweepSpec spec;
  WorkloadFlags workload = settings->workload;
  workload.seq = std::to_string(settings->seq.front());  // each point sets its own
  auto base = workload.Build();
  if (!base.ok()) return ReportError(base.status());
  spec.base = *base;
  if (settings->topologies.empty()) {
    spec.topologies.push_back(DefaultTopology());
  } else {
    for (const std::string& path : settings->topologies) {
      auto topology = LoadTopologyFile(path);
      if (!topology.ok()) return ReportError(topology.status());
      spec.topologies.push_back(std::move(topology).value());
    }
  }
  spec.gpus = settings->gpus;
  spec.seq_lens = settings->seq;
  spec.schemes = settings->schemes;
  spec.reserved_memory_bytes = settings->reserve_gib * kGiB;
  spec.simulate = settings->simulate;

  report::Progress progress;
  if (!flags.quiet) {
    progress = [](int64_t done, int64_t total) {
      std::fprintf(stderr, "meshplan: sweep: point %lld/%lld\n", static_cast<long long>(done),
                   static_cast<long long>(total));
      std::fflush(stderr);
    };
  }
  auto rows = report::RunSweep(spec, progress);
  if (!rows.ok()) return ReportError(rows.status());
  if (Status st = WriteSweepOutputs(flags, *rows); !st.ok()) return ReportError(st);
  if (!flags.plot.empty()) {
    if (Status st = report::WriteSweepPlots(*rows, flags.plot); !st.ok()) return ReportError(st);
  }
  return kExitOk;
}

}  // namespace

Runner RegisterSweepCommand(CLI::App& app) {
  auto flags = std::make_shared<SweepFlags>();
  CLI::App* cmd = app.add_subcommand(
      "sweep", "Plan every point of a grid of GPU counts, sequence lengths, topologies and schemes (CSV/JSON)");
  cmd->add_option("--topology,-t", flags->topologies,
                  "Cluster TOML file(s): repeat the flag or give a comma list (default: built-in 32 x 8 H100)")
      ->delimiter(',');
  cmd->add_option("--gpus", flags->gpus,
                  "GPU counts: list and ranges, e.g. 8,16,32 or 8..1024 (doubling) or 8..64:+8 (default: each "
                  "topology's own size); the outermost network level is scaled");
  flags->workload.Register(*cmd);
  cmd->get_option("--seq")->description(
      "Sequence lengths: list and ranges, e.g. 128K,1M or 128K..4M (doubling) or 64K..256K:+64K");
  cmd->add_option("--schemes", flags->schemes,
                  "Comma-separated schemes (default all): ring, allgather-kv, ulysses, usp, loongtrain, attention2d, "
                  "mesh, mesh-ulysses");
  cmd->add_option("--reserve-gib", flags->reserve_gib,
                  "GPU memory (GiB) held back for weights, optimizer state and other activations")
      ->capture_default_str();
  cmd->add_flag("--simulate", flags->simulate, "Also replay each point's best plan per scheme in the simulator");
  cmd->add_option("--format", flags->format, "Output: csv or json")->capture_default_str();
  cmd->add_option("--out,-o", flags->out, "Write the rows to this file instead of stdout");
  cmd->add_option("--plot", flags->plot,
                  "Write SVG charts (time vs GPUs, communication share vs sequence length, best-scheme map) "
                  "into this directory");
  cmd->add_option("--sweep-file", flags->sweep_file,
                  "TOML file with topologies, gpus, seq, schemes and workload keys (flags override it)");
  cmd->add_flag("--quiet,-q", flags->quiet, "No progress messages on stderr");
  return [cmd, flags] { return RunSweepCommand(*flags, *cmd); };
}

}  // namespace meshplan::tools
