// `meshplan fit`: the longest sequence each scheme fits in memory on a cluster, or, with a step
// time budget, the smallest cluster that runs a sequence within it (docs/capacity-planning.md).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "core/json_writer.h"
#include "core/units.h"
#include "report/fit.h"
#include "tools/cli_common.h"
#include "tools/commands.h"
#include "tools/text_format.h"

namespace meshplan::tools {
namespace {

struct FitFlags {
  WorkloadFlags workload;
  TopologyFlag topology;
  std::string schemes;
  double reserve_gib = 0;
  std::string max_seq = "1G";
  double budget_s = 0;
  std::string max_gpus = "4096";
  std::string format = "table";
};

// The workload without its sequence length, which `fit` chooses.
std::string WorkloadWithoutSeq(const Workload& w) {
  std::string text = w.Describe();
  const size_t at = text.find(" S=");
  if (at != std::string::npos) text.erase(at, text.find(' ', at + 1) - at);
  return text;
}

// "1M", "512K" when exact and short, else an approximation such as "~148.4M".
std::string ShortCount(int64_t count) {
  const std::string exact = FormatCount(count);
  if (exact.size() <= 5) return exact;
  const double m = static_cast<double>(count) / (1 << 20), k = static_cast<double>(count) / (1 << 10);
  return "~" + (m >= 1 ? Fixed(m, 1) + "M" : Fixed(k, 1) + "K");
}

std::string ClusterText(const Topology& t) {
  return t.name + " (" + std::to_string(t.num_gpus()) + " x " + t.gpu.model + ", " + FormatBytes(t.gpu.memory_bytes) +
         " each)";
}

int RunLongestFit(const FitFlags& flags, const Topology& topology, const Workload& workload,
                  const std::vector<Scheme>& schemes, double reserved) {
  auto max_seq = ParseCount(flags.max_seq);
  if (!max_seq.ok()) return ReportError(max_seq.status().WithContext("--max-seq"));
  auto fits = report::LongestFittingSequence(topology, workload, schemes, reserved, *max_seq);
  if (!fits.ok()) return ReportError(fits.status());
  const int64_t unit = report::FitGranularity(topology.num_gpus());
  if (flags.format == "json") {
    JsonWriter json;
    json.BeginObject();
    json.Key("topology");
    json.String(topology.name);
    json.Key("gpus");
    json.Int(topology.num_gpus());
    json.Key("workload");
    json.String(WorkloadWithoutSeq(workload));
    json.Key("reserved_bytes");
    json.Number(reserved);
    json.Key("granularity");
    json.Int(unit);
    json.Key("max_seq");
    json.Int(*max_seq);
    json.Key("schemes");
    json.BeginArray();
    for (const report::LongestFit& f : *fits) {
      json.BeginObject();
      json.Key("scheme");
      json.String(SchemeName(f.scheme));
      json.Key("found");
      json.Bool(f.found);
      if (f.found) {
        json.Key("seq_len");
        json.Int(f.seq_len);
        json.Key("at_limit");
        json.Bool(f.at_limit);
        json.Key("parameters");
        json.String(f.params.Describe());
        json.Key("peak_memory_bytes");
        json.Number(f.peak_memory_bytes);
        json.Key("time_s");
        json.Number(f.time_s);
      } else {
        json.Key("reason");
        json.String(f.reason);
      }
      json.EndObject();
    }
    json.EndArray();
    json.EndObject();
    std::puts(json.str().c_str());
    return kExitOk;
  }
  std::string out = "cluster:  " + ClusterText(topology) + "\n";
  out += "workload: " + WorkloadWithoutSeq(workload) + "\n";
  if (reserved > 0) out += "reserved: " + FormatBytes(reserved) + " per GPU\n";
  out += "longest sequence that fits, per scheme (multiples of " + std::to_string(unit) + " tokens = 2 x " +
         std::to_string(topology.num_gpus()) + " GPUs):\n\n";
  std::vector<std::vector<std::string>> rows = {{"scheme", "longest", "tokens", "peak memory", "time", "plan"}};
  std::vector<std::string> not_fitting;
  bool any_at_limit = false;
  for (const report::LongestFit& f : *fits) {
    if (!f.found) {
      not_fitting.push_back(std::string(SchemeName(f.scheme)) + ": " + f.reason);
      continue;
    }
    any_at_limit = any_at_limit || f.at_limit;
    rows.push_back({std::string(SchemeName(f.scheme)), ShortCount(f.seq_len) + (f.at_limit ? "+" : ""),
                    std::to_string(f.seq_len), FormatBytes(f.peak_memory_bytes), FormatSeconds(f.time_s),
                    f.params.Describe()});
  }
  if (rows.size() > 1) out += Columns(rows, "  ", true);
  if (any_at_limit) out += "\n  +: reached --max-seq " + FormatCount(*max_seq) + "; longer sequences may fit too\n";
  if (!not_fitting.empty()) {
    out += "\nno fitting sequence:\n";
    for (const std::string& line : not_fitting) out += "  " + line + "\n";
  }
  std::fputs(out.c_str(), stdout);
  return kExitOk;
}

int RunSmallestCluster(const FitFlags& flags, const Topology& topology, const Workload& workload,
                       const std::vector<Scheme>& schemes, double reserved) {
  auto max_gpus = ParseCount(flags.max_gpus);
  if (!max_gpus.ok()) return ReportError(max_gpus.status().WithContext("--max-gpus"));
  auto found = report::SmallestClusterFor(topology, workload, flags.budget_s, schemes, reserved, *max_gpus);
  if (!found.ok()) return ReportError(found.status());
  if (flags.format == "json") {
    JsonWriter json;
    json.BeginObject();
    json.Key("topology");
    json.String(found->topology);
    json.Key("gpus");
    json.Int(found->gpus);
    json.Key("workload");
    json.String(workload.Describe());
    json.Key("budget_s");
    json.Number(flags.budget_s);
    json.Key("scheme");
    json.String(SchemeName(found->params.scheme));
    json.Key("parameters");
    json.String(found->params.Describe());
    json.Key("time_s");
    json.Number(found->time_s);
    json.Key("peak_memory_bytes");
    json.Number(found->peak_memory_bytes);
    json.Key("sizes_tried");
    json.Int(found->sizes_tried);
    json.EndObject();
    std::puts(json.str().c_str());
    return kExitOk;
  }
  std::string out = "workload: " + workload.Describe() + "\n";
  if (reserved > 0) out += "reserved: " + FormatBytes(reserved) + " per GPU\n";
  out += "budget:   " + FormatSeconds(flags.budget_s) + " per step\n\n";
  out += "smallest cluster: " + std::to_string(found->gpus) + " GPUs (" + found->topology + ", " +
         std::to_string(found->sizes_tried) + " sizes tried)\n";
  out += "plan:             " + std::string(SchemeName(found->params.scheme)) + " " + found->params.Describe() + "\n";
  out += "time:             " + FormatSeconds(found->time_s) + "\n";
  out += "peak memory:      " + FormatBytes(found->peak_memory_bytes) + " per GPU\n";
  std::fputs(out.c_str(), stdout);
  return kExitOk;
}

int RunFit(const FitFlags& flags, const CLI::App& cmd) {
  if (Status st = CheckFormat(flags.format, {"table", "json"}); !st.ok()) return ReportError(st);
  if (flags.reserve_gib < 0) return ReportError(Status::Invalid("--reserve-gib: must not be negative"));
  const bool budget_mode = cmd.count("--budget-s") > 0;
  if (budget_mode && !(flags.budget_s > 0)) return ReportError(Status::Invalid("--budget-s: must be positive"));
  if (!budget_mode && cmd.count("--max-gpus") > 0) {
    return ReportError(Status::Invalid("--max-gpus: only applies with --budget-s"));
  }
  if (budget_mode && cmd.count("--seq") == 0) {
    return ReportError(Status::Invalid("--budget-s: needs --seq, the sequence length to run within the budget"));
  }
  if (!budget_mode && cmd.count("--seq") > 0) {
    return ReportError(
        Status::Invalid("--seq: only applies with --budget-s (without it, fit finds the longest sequence)"));
  }
  if (budget_mode && cmd.count("--max-seq") > 0) {
    return ReportError(Status::Invalid("--max-seq: does not apply with --budget-s (--seq gives the sequence)"));
  }
  std::vector<Scheme> schemes;
  for (const std::string& name : SplitList(flags.schemes)) {
    auto scheme = ParseScheme(name);
    if (!scheme.ok()) return ReportError(scheme.status().WithContext("--schemes"));
    schemes.push_back(*scheme);
  }
  auto topology = flags.topology.Load();
  if (!topology.ok()) return ReportError(topology.status());
  // Without a budget the sequence is what `fit` finds; --seq's default stands in for it.
  auto workload = flags.workload.Build();
  if (!workload.ok()) return ReportError(workload.status());
  const double reserved = flags.reserve_gib * kGiB;
  return budget_mode ? RunSmallestCluster(flags, *topology, *workload, schemes, reserved)
                     : RunLongestFit(flags, *topology, *workload, schemes, reserved);
}

}  // namespace

Runner RegisterFitCommand(CLI::App& app) {
  auto flags = std::make_shared<FitFlags>();
  CLI::App* cmd = app.add_subcommand(
      "fit", "Longest sequence each scheme fits in memory, or (--budget-s) the smallest cluster meeting a step time");
  flags->topology.Register(*cmd);
  flags->workload.Register(*cmd);
  cmd->get_option("--seq")->description("Sequence length for --budget-s (without it, fit finds the longest)");
  cmd->add_option("--schemes", flags->schemes,
                  "Comma-separated schemes (default all): ring, allgather-kv, ulysses, usp, loongtrain, attention2d, "
                  "mesh, mesh-ulysses");
  cmd->add_option("--reserve-gib", flags->reserve_gib,
                  "GPU memory (GiB) held back for weights, optimizer state and other activations")
      ->capture_default_str();
  cmd->add_option("--max-seq", flags->max_seq, "Longest sequence to try")->capture_default_str();
  cmd->add_option("--budget-s", flags->budget_s,
                  "Step-time budget in seconds: find the smallest cluster that runs --seq within it");
  cmd->add_option("--max-gpus", flags->max_gpus, "Largest cluster to try with --budget-s")->capture_default_str();
  cmd->add_option("--format", flags->format, "Output: table or json")->capture_default_str();
  return [cmd, flags] { return RunFit(*flags, *cmd); };
}

}  // namespace meshplan::tools
