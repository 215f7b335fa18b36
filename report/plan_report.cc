#include "report/plan_report.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "core/json_writer.h"
#include "core/units.h"
#include "report/text_table.h"

namespace meshplan::report {
namespace {

std::string ClusterLine(const planner::PlanContext& ctx) {
  const Topology& t = ctx.topology;
  std::string levels;
  for (const NetworkLevel& l : t.levels) {
    levels += (levels.empty() ? "" : ", ") + l.name + " " + std::to_string(l.group_size) + " x " +
              Fixed(l.bandwidth_bytes_per_s / 1e9, 0) + " GB/s";
  }
  return std::to_string(t.num_gpus()) + " x " + t.gpu.model + " (" + t.name + ": " + levels + ")";
}

// Whether any plan was re-ranked by simulation (then reports show a "simulated" column).
bool AnySimulated(const planner::SearchResult& result) {
  return std::any_of(result.ranked.begin(), result.ranked.end(),
                     [](const planner::Estimate& e) { return e.simulated_s >= 0; });
}

size_t Rows(const planner::SearchResult& result, int top) {
  return top <= 0 ? result.ranked.size() : std::min<size_t>(result.ranked.size(), static_cast<size_t>(top));
}

}  // namespace

std::string PlanTable(const planner::PlanContext& ctx, const planner::SearchResult& result, int top) {
  std::string out = "cluster:  " + ClusterLine(ctx) + "\n";
  out += "workload: " + ctx.workload.Describe() + "\n";
  if (ctx.reserved_memory_bytes > 0) {
    out += "memory:   " + FormatBytes(ctx.reserved_memory_bytes) + " per GPU reserved for the rest of the model\n";
  }
  out += "\n";
  std::vector<std::vector<std::string>> rows;
  const bool simulated = AnySimulated(result);
  std::vector<std::string> header = {"#", "scheme", "parameters", "time"};
  if (simulated) header.push_back("simulated");
  header.insert(header.end(), {"compute", "exposed comm"});
  for (const NetworkLevel& l : ctx.topology.levels) header.push_back("bytes/GPU " + l.name);
  header.insert(header.end(), {"imbalance", "peak mem", "fits"});
  rows.push_back(header);
  const size_t n = Rows(result, top);
  for (size_t i = 0; i < n; ++i) {
    const planner::Estimate& e = result.ranked[i];
    std::vector<std::string> row = {std::to_string(i + 1), std::string(SchemeName(e.params.scheme)),
                                    e.params.Describe(), FormatSeconds(e.time_s)};
    if (simulated) row.push_back(e.simulated_s >= 0 ? FormatSeconds(e.simulated_s) : "-");
    row.insert(row.end(), {FormatSeconds(e.compute_s), FormatSeconds(e.exposed_comm_s)});
    for (size_t l = 0; l < ctx.topology.levels.size(); ++l) {
      row.push_back(l < e.level_bytes.size() ? FormatBytes(e.level_bytes[l]) : "-");
    }
    row.push_back(Fixed(e.imbalance(), 2) + "x");
    row.push_back(FormatBytes(e.peak_memory_bytes));
    row.push_back(e.fits ? "yes" : "NO");
    rows.push_back(row);
  }
  out += Columns(rows, "", /*rule=*/true);
  if (n < result.ranked.size()) {
    out += "... " + std::to_string(result.ranked.size() - n) + " more plans (--top 0 shows all)\n";
  }
  const auto best = std::find_if(result.ranked.begin(), result.ranked.end(),
                                 [](const planner::Estimate& e) { return e.fits; });
  out += "\n" + std::to_string(result.evaluated) + " candidates evaluated, " +
         std::to_string(result.ranked.size()) + " valid";
  if (best == result.ranked.end()) {
    out += "; none fits in " + FormatBytes(ctx.topology.gpu.memory_bytes) + " per GPU\n";
  } else {
    out += "; best that fits: #" + std::to_string(best - result.ranked.begin() + 1) + " " +
           std::string(SchemeName(best->params.scheme)) + " " + best->params.Describe() + "\n";
  }
  if (!result.rejected.empty()) {
    out += "\nnot applicable:\n";
    for (const planner::Estimate& e : result.rejected) {
      out += "  " + std::string(SchemeName(e.params.scheme)) + ": " + e.reason + "\n";
    }
  }
  return out;
}

std::string PlanJson(const planner::PlanContext& ctx, const planner::SearchResult& result, int top) {
  JsonWriter j;
  j.BeginObject();
  j.Key("cluster");
  j.BeginObject();
  j.Key("name");
  j.String(ctx.topology.name);
  j.Key("gpus");
  j.Int(ctx.topology.num_gpus());
  j.Key("gpu");
  j.String(ctx.topology.gpu.model);
  j.Key("levels");
  j.BeginArray();
  for (const NetworkLevel& l : ctx.topology.levels) j.String(l.name);
  j.EndArray();
  j.EndObject();
  j.Key("workload");
  j.String(ctx.workload.Describe());
  j.Key("evaluated");
  j.Int(result.evaluated);
  j.Key("plans");
  j.BeginArray();
  const bool simulated = AnySimulated(result);
  const size_t n = Rows(result, top);
  for (size_t i = 0; i < n; ++i) {
    const planner::Estimate& e = result.ranked[i];
    j.BeginObject();
    j.Key("rank");
    j.Int(static_cast<long long>(i + 1));
    j.Key("scheme");
    j.String(SchemeName(e.params.scheme));
    j.Key("parameters");
    j.String(e.params.Describe());
    j.Key("layout");
    j.String(LayoutName(e.params.layout));
    j.Key("tile_a");
    j.Int(e.params.tile_a);
    j.Key("tile_b");
    j.Int(e.params.tile_b);
    j.Key("ulysses");
    j.Int(e.params.ulysses);
    j.Key("ring");
    j.Int(e.params.ring);
    j.Key("window");
    j.Int(e.params.window);
    j.Key("cache_forward");
    j.Bool(e.params.cache_forward);
    j.Key("placement");
    j.BeginArray();
    for (const auto& p : e.params.placement) j.String(p);
    j.EndArray();
    j.Key("time_s");
    j.Number(e.time_s);
    if (simulated) {
      j.Key("simulated_s");
      if (e.simulated_s >= 0) {
        j.Number(e.simulated_s);
      } else {
        j.Raw("null");
      }
    }
    j.Key("compute_s");
    j.Number(e.compute_s);
    j.Key("exposed_comm_s");
    j.Number(e.exposed_comm_s);
    j.Key("bytes_per_gpu");
    j.Number(e.bytes_per_rank);
    j.Key("bytes_per_gpu_by_level");
    j.BeginObject();
    for (size_t l = 0; l < ctx.topology.levels.size() && l < e.level_bytes.size(); ++l) {
      j.Key(ctx.topology.levels[l].name);
      j.Number(e.level_bytes[l]);
    }
    j.EndObject();
    j.Key("flops_max");
    j.Number(e.flops_max);
    j.Key("flops_mean");
    j.Number(e.flops_mean);
    j.Key("imbalance");
    j.Number(e.imbalance());
    j.Key("peak_memory_bytes");
    j.Number(e.peak_memory_bytes);
    j.Key("fits");
    j.Bool(e.fits);
    j.EndObject();
  }
  j.EndArray();
  j.Key("not_applicable");
  j.BeginArray();
  for (const planner::Estimate& e : result.rejected) {
    j.BeginObject();
    j.Key("scheme");
    j.String(SchemeName(e.params.scheme));
    j.Key("reason");
    j.String(e.reason);
    j.EndObject();
  }
  j.EndArray();
  j.EndObject();
  return j.str() + "\n";
}

std::string PlanCsv(const planner::PlanContext& ctx, const planner::SearchResult& result, int top) {
  const bool simulated = AnySimulated(result);
  std::string out = "rank,scheme,parameters,time_s,";
  if (simulated) out += "simulated_s,";
  out += "compute_s,exposed_comm_s,bytes_per_gpu";
  for (const NetworkLevel& l : ctx.topology.levels) out += ",bytes_" + l.name;
  out += ",flops_max,imbalance,peak_memory_bytes,fits\n";
  const size_t n = Rows(result, top);
  for (size_t i = 0; i < n; ++i) {
    const planner::Estimate& e = result.ranked[i];
    char buffer[256];
    std::snprintf(buffer, sizeof buffer, "%zu,%s,\"%s\",%.9g,", i + 1, std::string(SchemeName(e.params.scheme)).c_str(),
                  e.params.Describe().c_str(), e.time_s);
    out += buffer;
    if (simulated) {
      // Empty field: not simulated.
      if (e.simulated_s >= 0) {
        std::snprintf(buffer, sizeof buffer, "%.9g", e.simulated_s);
        out += buffer;
      }
      out += ",";
    }
    std::snprintf(buffer, sizeof buffer, "%.9g,%.9g,%.0f", e.compute_s, e.exposed_comm_s, e.bytes_per_rank);
    out += buffer;
    for (size_t l = 0; l < ctx.topology.levels.size(); ++l) {
      std::snprintf(buffer, sizeof buffer, ",%.0f", l < e.level_bytes.size() ? e.level_bytes[l] : 0.0);
      out += buffer;
    }
    std::snprintf(buffer, sizeof buffer, ",%.6g,%.6f,%.0f,%s\n", e.flops_max, e.imbalance(), e.peak_memory_bytes,
                  e.fits ? "true" : "false");
    out += buffer;
  }
  return out;
}

std::string PlanExplain(const planner::PlanContext& ctx, const planner::Estimate& e, int rank_in_list,
                          const Schedule* schedule) {
  std::ostringstream out;
  out << "plan #" << rank_in_list << ": " << SchemeName(e.params.scheme) << " " << e.params.Describe() << "\n";
  out << "  cluster:  " << ClusterLine(ctx) << "\n";
  out << "  workload: " << ctx.workload.Describe() << "\n\n";
  out << "communication per GPU: " << FormatBytes(e.bytes_per_rank) << " (forward "
      << FormatBytes(e.fwd_bytes_per_rank) << ", backward " << FormatBytes(e.bwd_bytes_per_rank) << ")\n";
  for (size_t l = 0; l < ctx.topology.levels.size() && l < e.level_bytes.size(); ++l) {
    out << "  over " << ctx.topology.levels[l].name << ": " << FormatBytes(e.level_bytes[l])
        << " (busiest GPU)\n";
  }
  out << "compute per GPU: " << Fixed(e.flops_max / 1e12, 2) << " TFLOP on the busiest GPU, mean "
      << Fixed(e.flops_mean / 1e12, 2) << " TFLOP (imbalance " << Fixed(e.imbalance(), 3) << "x)\n";
  out << "peak memory per GPU: " << FormatBytes(e.peak_memory_bytes) << " of "
      << FormatBytes(ctx.topology.gpu.memory_bytes) << (e.fits ? " (fits)" : " (DOES NOT FIT)")
      << (e.params.cache_forward ? "; forward tensors cached for the backward" : "; backward re-fetches Q/KV")
      << "\n\n";
  out << "time model (stage x count: compute | communication -> stage time):\n";
  for (const planner::TimeStage& s : e.stages) {
    out << "  " << s.label << " x" << s.count << ": " << FormatSeconds(s.compute_s) << " | "
        << FormatSeconds(s.comm_s) << (s.overlapped ? " overlapped" : " exposed") << " -> "
        << FormatSeconds(s.Seconds()) << "\n";
  }
  out << "  total " << FormatSeconds(e.time_s) << " = compute " << FormatSeconds(e.compute_s)
      << " + exposed communication " << FormatSeconds(e.exposed_comm_s) << "\n";
  if (schedule != nullptr && !schedule->ranks.empty()) {
    const RankProgram& r0 = schedule->ranks[0];
    out << "\nschedule: " << schedule->TotalOps() << " ops over " << schedule->num_ranks
        << " ranks; rank 0's first ops:\n";
    const size_t shown = std::min<size_t>(r0.ops.size(), 24);
    for (size_t i = 0; i < shown; ++i) {
      const Op& op = r0.ops[i];
      out << "  [" << i << "] " << (op.phase == Phase::kForward ? "fwd " : "bwd ");
      if (op.step >= 0) out << "step " << op.step << " ";
      out << OpKindName(op.kind);
      if (op.kind == OpKind::kCompute) {
        out << " Q" << op.q_shard << " x KV" << op.kv_shard << " heads " << op.head_begin << ".."
            << op.head_begin + op.head_count - 1 << " (" << Fixed(op.flops / 1e9, 1) << " GFLOP)";
      } else {
        out << " " << TensorNames(op.tensors);
        if (op.kind == OpKind::kSend) out << " -> rank " << op.peer;
        if (op.kind == OpKind::kRecv) out << " <- rank " << op.peer;
        if (op.group >= 0) out << " group " << op.group;
        if (op.bytes > 0) out << " " << FormatBytes(static_cast<double>(op.bytes));
      }
      out << "\n";
    }
    if (shown < r0.ops.size()) out << "  ... " << r0.ops.size() - shown << " more ops\n";
  } else {
    out << "\nschedule: not expanded here for " << ctx.num_ranks
        << " ranks (the listing is limited to small clusters)\n";
  }
  return out.str();
}

std::string EstimateToml(const planner::Estimate& e) {
  char buffer[512];
  std::snprintf(buffer, sizeof buffer,
                "[estimate]\n# Informational: the planner's prediction when this plan was made.\n"
                "time_s = %.9g\ncompute_s = %.9g\nexposed_comm_s = %.9g\nbytes_per_gpu = %.0f\n"
                "peak_memory_bytes = %.0f\nfits = %s\n",
                e.time_s, e.compute_s, e.exposed_comm_s, e.bytes_per_rank, e.peak_memory_bytes,
                e.fits ? "true" : "false");
  std::string out = buffer;
  if (e.simulated_s >= 0) {
    std::snprintf(buffer, sizeof buffer, "simulated_s = %.9g\n", e.simulated_s);
    out += buffer;
  }
  return out;
}

}  // namespace meshplan::report
