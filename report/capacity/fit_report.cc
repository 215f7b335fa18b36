#include "report/capacity/fit_report.h"

#include "core/base/json_writer.h"
#include "core/base/units.h"
#include "planner/schemes/registry.h"
#include "report/format/text_table.h"
#include "report/format/workload_json.h"

namespace meshplan::report {
namespace {

using capacity::LongestFit;
using capacity::SmallestCluster;

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
  const double m = static_cast<double>(count) / (1 << 20),
               k = static_cast<double>(count) / (1 << 10);
  return "~" + (m >= 1 ? Fixed(m, 1) + "M" : Fixed(k, 1) + "K");
}

std::string ClusterText(const Topology& t) {
  return t.name + " (" + std::to_string(t.num_gpus()) + " x " + t.gpu.model + ", " +
         FormatBytes(t.gpu.memory_bytes) + " each, attention kernel " + t.gpu.attention_kernel +
         ")";
}

}  // namespace

std::string LongestFitTable(const Topology& topology, const Workload& workload,
                            double reserved_bytes, int64_t max_seq,
                            const std::vector<LongestFit>& fits) {
  const int64_t unit = capacity::FitGranularity(topology.num_gpus());
  std::string out = "cluster:  " + ClusterText(topology) + "\n";
  out += "workload: " + WorkloadWithoutSeq(workload) + "\n";
  if (reserved_bytes > 0) out += "reserved: " + FormatBytes(reserved_bytes) + " per GPU\n";
  out += "longest sequence that fits, per scheme (multiples of " + std::to_string(unit) +
         " tokens = 2 x " + std::to_string(topology.num_gpus()) + " GPUs):\n\n";
  std::vector<std::vector<std::string>> rows = {
      {"scheme", "longest", "tokens", "peak memory", "time", "plan"}};
  std::vector<std::string> not_fitting;
  bool any_at_limit = false;
  for (const LongestFit& f : fits) {
    if (!f.found) {
      not_fitting.push_back(std::string(SchemeName(f.scheme)) + ": " + f.reason);
      continue;
    }
    any_at_limit = any_at_limit || f.at_limit;
    rows.push_back({std::string(SchemeName(f.scheme)),
                    ShortCount(f.seq_len) + (f.at_limit ? "+" : ""), std::to_string(f.seq_len),
                    FormatBytes(f.peak_memory_bytes), FormatSeconds(f.time_s),
                    planner::DescribeParams(f.params)});
  }
  if (rows.size() > 1) out += Columns(rows, "  ", true);
  if (any_at_limit)
    out += "\n  +: reached --max-seq " + FormatCount(max_seq) + "; longer sequences may fit too\n";
  if (!not_fitting.empty()) {
    out += "\nno fitting sequence:\n";
    for (const std::string& line : not_fitting) out += "  " + line + "\n";
  }
  return out;
}

std::string LongestFitJson(const Topology& topology, const Workload& workload,
                           double reserved_bytes, int64_t max_seq,
                           const std::vector<LongestFit>& fits) {
  JsonWriter json;
  json.BeginObject();
  json.Key("topology");
  json.String(topology.name);
  json.Key("gpus");
  json.Int(topology.num_gpus());
  json.Key("workload");
  WriteWorkloadJson(json, workload, WorkloadWithoutSeq(workload), {.seq = false});
  json.Key("reserved_bytes");
  json.Bytes(reserved_bytes);
  json.Key("granularity");
  json.Int(capacity::FitGranularity(topology.num_gpus()));
  json.Key("max_seq");
  json.Int(max_seq);
  json.Key("schemes");
  json.BeginArray();
  for (const LongestFit& f : fits) {
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
      json.String(planner::DescribeParams(f.params));
      json.Key("peak_memory_bytes");
      json.Bytes(f.peak_memory_bytes);
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
  return json.str() + "\n";
}

std::string TimeBudget::Describe(Pass pass) const {
  const std::string words = " (" + std::string(PassName(pass)) + ")";
  if (model.empty() && layers == 1)
    return FormatSeconds(seconds) + " for one attention layer" + words;
  return FormatSeconds(seconds) + " for the " + std::to_string(layers) + " attention layers" +
         (model.empty() ? "" : " of " + model) + " in one training step" + words + ": " +
         FormatSeconds(per_layer_s()) + " per layer";
}

std::string SmallestClusterTable(const Workload& workload, double reserved_bytes,
                                 const TimeBudget& budget, const SmallestCluster& found) {
  std::string out = "workload: " + workload.Describe() + "\n";
  if (reserved_bytes > 0) out += "reserved: " + FormatBytes(reserved_bytes) + " per GPU\n";
  out += "budget:   " + budget.Describe(workload.pass) + "\n\n";
  out += "smallest cluster: " + std::to_string(found.gpus) + " GPUs (" + found.topology + ", " +
         std::to_string(found.sizes_tried) + " sizes tried)\n";
  out += "plan:             " + std::string(SchemeName(found.params.scheme)) + " " +
         planner::DescribeParams(found.params) + "\n";
  out += "time:             " + FormatSeconds(found.time_s) + " per attention layer";
  if (budget.layers > 1) {
    out += ", " + FormatSeconds(found.time_s * static_cast<double>(budget.layers)) + " for all " +
           std::to_string(budget.layers);
  }
  out += "\n";
  out += "peak memory:      " + FormatBytes(found.peak_memory_bytes) + " per GPU\n";
  return out;
}

std::string SmallestClusterJson(const Workload& workload, const TimeBudget& budget,
                                const SmallestCluster& found) {
  JsonWriter json;
  json.BeginObject();
  json.Key("topology");
  json.String(found.topology);
  json.Key("gpus");
  json.Int(found.gpus);
  json.Key("workload");
  WriteWorkloadJson(json, workload);
  json.Key("budget_s");
  json.Number(budget.seconds);
  json.Key("budget_is");
  json.String(budget.Describe(workload.pass));
  json.Key("per_layer_budget_s");
  json.Number(budget.per_layer_s());
  json.Key("layers");
  json.Int(budget.layers);
  json.Key("scheme");
  json.String(SchemeName(found.params.scheme));
  json.Key("parameters");
  json.String(planner::DescribeParams(found.params));
  json.Key("time_s");
  json.Number(found.time_s);
  if (budget.layers > 1) {
    json.Key("all_layers_s");
    json.Number(found.time_s * static_cast<double>(budget.layers));
  }
  json.Key("peak_memory_bytes");
  json.Bytes(found.peak_memory_bytes);
  json.Key("sizes_tried");
  json.Int(found.sizes_tried);
  json.EndObject();
  return json.str() + "\n";
}

}  // namespace meshplan::report
