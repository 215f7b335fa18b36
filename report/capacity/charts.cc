#include "report/capacity/charts.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "core/base/atomic_file.h"
#include "core/base/units.h"
#include "planner/schemes/registry.h"
#include "report/capacity/near_ties.h"
#include "simulator/sim_time.h"

namespace meshplan::report {
namespace {

// "dgx-h100-32node@64" -> "dgx-h100-32node".
std::string BaseTopology(const std::string& name) {
  const size_t at = name.rfind('@');
  return at == std::string::npos ? name : name.substr(0, at);
}

bool Usable(const SweepRow& row) { return row.valid && row.fits && RowTime(row) > 0; }

// Schemes present in rows, in the registry's order (stable colours across charts).
std::vector<Scheme> SchemesOf(const std::vector<SweepRow>& rows) {
  std::vector<Scheme> out;
  for (const Scheme& s : planner::AllSchemes()) {
    const auto has_s = [&](const SweepRow& r) { return r.scheme == s; };
    if (std::any_of(rows.begin(), rows.end(), has_s)) out.push_back(s);
  }
  return out;
}

std::vector<std::string> TopologiesOf(const std::vector<SweepRow>& rows) {
  std::vector<std::string> out;
  for (const SweepRow& r : rows) {
    const std::string base = BaseTopology(r.topology);
    if (std::find(out.begin(), out.end(), base) == out.end()) out.push_back(base);
  }
  return out;
}

bool AnySimulated(const std::vector<SweepRow>& rows) {
  return std::any_of(rows.begin(), rows.end(),
                     [](const SweepRow& r) { return r.simulated_s >= 0; });
}

// One series per scheme (and topology, when several): the smallest y at each x among rows that
// `select` keeps, for `x` and `y` of a row.
template <typename Select, typename X, typename Y>
std::vector<plot::Series> SeriesByScheme(const std::vector<SweepRow>& rows, Select select, X x,
                                         Y y) {
  const std::vector<std::string> topologies = TopologiesOf(rows);
  std::vector<plot::Series> out;
  for (const std::string& topology : topologies) {
    for (Scheme scheme : SchemesOf(rows)) {
      std::map<double, double> best;  // x -> y
      bool any_valid = false;
      for (const SweepRow& r : rows) {
        if (r.scheme != scheme || BaseTopology(r.topology) != topology || !select(r)) continue;
        any_valid = any_valid || r.valid;
        if (!Usable(r)) continue;
        const double vx = x(r), vy = y(r);
        auto [it, inserted] = best.emplace(vx, vy);
        if (!inserted) it->second = std::min(it->second, vy);
      }
      plot::Series series;
      series.name = std::string(SchemeName(scheme));
      if (topologies.size() > 1) series.name += " (" + topology + ")";
      if (best.empty()) series.name += any_valid ? " (does not fit)" : " (no valid plan)";
      series.points.assign(best.begin(), best.end());
      out.push_back(std::move(series));
    }
  }
  return out;
}

// "within 0.5%": the tie tolerance as the charts state it.
std::string TieLabel() {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "within %g%%", kTieRelativeTolerance * 100);
  return buffer;
}

std::string TopologySuffix(const std::vector<SweepRow>& rows) {
  const std::vector<std::string> topologies = TopologiesOf(rows);
  if (topologies.size() != 1) return "";
  return " (" + topologies[0] + ")";
}

}  // namespace

double RowTime(const SweepRow& row) { return row.simulated_s >= 0 ? row.simulated_s : row.time_s; }

plot::LineChart TimeVsGpus(const std::vector<SweepRow>& rows, int64_t seq_len) {
  plot::LineChart chart;
  chart.title = "Time per attention layer vs GPU count at " + FormatCount(seq_len) + " tokens" +
                TopologySuffix(rows);
  chart.x_label = "GPUs (count, log scale)";
  chart.y_label = AnySimulated(rows) ? "time per attention layer, simulated (ms)"
                                     : "time per attention layer (ms)";
  chart.log_x = true;
  chart.log_y = true;
  chart.series = SeriesByScheme(
      rows, [seq_len](const SweepRow& r) { return r.seq_len == seq_len; },
      [](const SweepRow& r) { return static_cast<double>(r.gpus); },
      [](const SweepRow& r) { return RowTime(r) * 1e3; });
  return chart;
}

plot::LineChart TimeVsSeq(const std::vector<SweepRow>& rows, int64_t gpus) {
  const bool all_layers =
      std::any_of(rows.begin(), rows.end(), [](const SweepRow& r) { return r.all_layers_s >= 0; });
  const std::string what =
      all_layers ? "attention time per training step (all layers)" : "time per attention layer";
  plot::LineChart chart;
  chart.title = (all_layers ? "Attention time per training step" : "Time per attention layer") +
                std::string(" vs sequence length on ") + std::to_string(gpus) + " GPUs" +
                TopologySuffix(rows);
  chart.x_label = "sequence length (tokens, log scale)";
  chart.y_label = what + (AnySimulated(rows) ? ", simulated (ms)" : " (ms)");
  chart.log_x = true;
  chart.log_y = true;
  chart.series = SeriesByScheme(
      rows, [gpus](const SweepRow& r) { return r.gpus == gpus; },
      [](const SweepRow& r) { return static_cast<double>(r.seq_len); },
      [](const SweepRow& r) {
        if (r.all_layers_s < 0 || r.time_s <= 0) return RowTime(r) * 1e3;
        return r.all_layers_s * (RowTime(r) / r.time_s) * 1e3;
      });
  return chart;
}

plot::LineChart CommShareVsSeq(const std::vector<SweepRow>& rows, int64_t gpus) {
  plot::LineChart chart;
  chart.title = "Exposed communication share of a layer's time on " + std::to_string(gpus) +
                " GPUs" + TopologySuffix(rows);
  chart.x_label = "sequence length (tokens, log scale)";
  chart.y_label = "exposed communication (% of step)";
  chart.log_x = true;
  chart.log_y = false;
  chart.series = SeriesByScheme(
      rows, [gpus](const SweepRow& r) { return r.gpus == gpus; },
      [](const SweepRow& r) { return static_cast<double>(r.seq_len); },
      [](const SweepRow& r) { return r.comm_share * 100.0; });
  return chart;
}

plot::CategoryMap BestSchemeMap(const std::vector<SweepRow>& rows) {
  plot::CategoryMap map;
  map.title = "Fastest scheme by GPU count and sequence length" + TopologySuffix(rows);
  map.x_label = "GPUs";
  map.y_label = "sequence length (tokens)";
  std::set<int64_t> seqs, gpus;
  for (const SweepRow& r : rows) {
    seqs.insert(r.seq_len);
    gpus.insert(r.gpus);
  }
  const std::vector<Scheme> schemes = SchemesOf(rows);
  for (Scheme s : schemes) map.categories.emplace_back(SchemeName(s));
  for (int64_t g : gpus) map.x_ticks.push_back(std::to_string(g));
  for (int64_t s : seqs) map.y_ticks.push_back(FormatCount(s));
  map.tie_label = TieLabel();
  map.tie_legend = "band: other schemes " + map.tie_label;
  const std::vector<int64_t> seq_list(seqs.begin(), seqs.end());
  const std::vector<int64_t> gpu_list(gpus.begin(), gpus.end());
  // [row][column][scheme]: the scheme's fastest usable time at that point, -1 when it has none.
  std::vector<std::vector<std::vector<double>>> times(
      seq_list.size(),
      std::vector<std::vector<double>>(gpu_list.size(), std::vector<double>(schemes.size(), -1)));
  for (const SweepRow& r : rows) {
    if (!Usable(r)) continue;
    const size_t row = static_cast<size_t>(
        std::lower_bound(seq_list.begin(), seq_list.end(), r.seq_len) - seq_list.begin());
    const size_t col = static_cast<size_t>(
        std::lower_bound(gpu_list.begin(), gpu_list.end(), r.gpus) - gpu_list.begin());
    const size_t scheme =
        static_cast<size_t>(std::find(schemes.begin(), schemes.end(), r.scheme) - schemes.begin());
    double& t = times[row][col][scheme];
    if (t < 0 || RowTime(r) < t) t = RowTime(r);
  }
  map.cells.assign(seq_list.size(), std::vector<int>(gpu_list.size(), -1));
  map.notes.assign(seq_list.size(), std::vector<std::string>(gpu_list.size()));
  map.ties.assign(seq_list.size(), std::vector<std::vector<plot::TiedCategory>>(gpu_list.size()));
  for (size_t row = 0; row < seq_list.size(); ++row) {
    for (size_t col = 0; col < gpu_list.size(); ++col) {
      std::vector<int> present;  // schemes with a time here, in scheme order
      std::vector<double> present_times;
      for (size_t k = 0; k < schemes.size(); ++k) {
        if (times[row][col][k] < 0) continue;
        present.push_back(static_cast<int>(k));
        present_times.push_back(times[row][col][k]);
      }
      if (present.empty()) continue;
      // Equal times: the earlier scheme is drawn, the others are its ties.
      const NearTies near = FindNearTies(present_times);
      map.cells[row][col] = present[near.best];
      map.notes[row][col] = FormatSeconds(present_times[near.best]);
      for (size_t i : near.tied)
        map.ties[row][col].push_back({present[i], FormatSeconds(present_times[i])});
    }
  }
  return map;
}

plot::Timeline SimulatedTimeline(const Schedule& schedule, const sim::SimResult& result,
                                 int max_lanes) {
  plot::Timeline t;
  const int64_t ranks = static_cast<int64_t>(schedule.ranks.size());
  const int64_t shown = max_lanes > 0 ? std::min<int64_t>(ranks, max_lanes) : ranks;
  t.title = "Simulated timeline: " + std::string(SchemeName(schedule.scheme)) + " on " +
            std::to_string(ranks) + " ranks, " + FormatSeconds(result.total_s) + " for the layer";
  if (shown < ranks) t.title += " (first " + std::to_string(shown) + " ranks shown)";
  if (result.op_times.empty()) t.title += " (op times not recorded)";
  t.time_label = "time (ms)";
  t.categories = {"compute fwd", "compute bwd", "send/recv", "collective"};
  for (int64_t r = 0; r < shown; ++r) t.lanes.push_back("rank " + std::to_string(r));
  for (int64_t r = 0; r < shown; ++r) {
    const size_t rank = static_cast<size_t>(r);
    if (rank >= result.op_times.size()) continue;
    const std::vector<Op>& ops = schedule.ranks[rank].ops;
    const std::vector<sim::OpTime>& times = result.op_times[rank];
    for (size_t i = 0; i < ops.size() && i < times.size(); ++i) {
      const Op& op = ops[i];
      plot::Timeline::Bar bar;
      bar.lane = static_cast<int>(r);
      bar.start = sim::ToSeconds(times[i].start) * 1e3;
      bar.end = sim::ToSeconds(times[i].end) * 1e3;
      switch (op.kind) {
        case OpKind::kCompute:
        case OpKind::kMerge:
          bar.category = op.phase == Phase::kForward ? 0 : 1;
          break;
        case OpKind::kSend:
        case OpKind::kRecv:
          bar.category = 2;
          break;
        case OpKind::kAllGather:
        case OpKind::kReduceScatter:
        case OpKind::kAllToAll:
          bar.category = 3;
          break;
      }
      t.bars.push_back(bar);
    }
  }
  return t;
}

Status WriteSweepPlots(const std::vector<SweepRow>& rows, const std::string& dir) {
  if (rows.empty()) return Status::Invalid("no sweep rows to plot");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::Io(dir + ": cannot create directory (" + ec.message() + ")");
  std::set<int64_t> seqs, gpus;
  for (const SweepRow& r : rows) {
    seqs.insert(r.seq_len);
    gpus.insert(r.gpus);
  }
  const std::filesystem::path base(dir);
  auto write = [&base](const std::string& name, const std::string& svg) {
    return WriteFileAtomically((base / name).string(), svg);
  };
  // The charts this sweep draws (a line chart needs two values on its x axis).
  std::vector<std::pair<std::string, plot::LineChart>> charts;
  if (gpus.size() >= 2) {
    charts.emplace_back("time-vs-gpus.svg", TimeVsGpus(rows, *seqs.rbegin()));
    if (seqs.size() >= 2 && seqs.size() <= 8) {
      for (int64_t seq : seqs)
        charts.emplace_back("time-vs-gpus-" + FormatCount(seq) + ".svg", TimeVsGpus(rows, seq));
    }
  }
  if (seqs.size() >= 2) {
    charts.emplace_back("time-vs-seq.svg", TimeVsSeq(rows, *gpus.rbegin()));
    if (gpus.size() >= 2 && gpus.size() <= 8) {
      for (int64_t g : gpus)
        charts.emplace_back("time-vs-seq-" + std::to_string(g) + ".svg", TimeVsSeq(rows, g));
    }
    charts.emplace_back("comm-share-vs-seq.svg", CommShareVsSeq(rows, *gpus.rbegin()));
  }
  // An earlier sweep's line charts that this one does not draw go, so DIR shows this sweep's.
  std::set<std::string> drawn;
  for (const auto& [name, chart] : charts) drawn.insert(name);
  for (const auto& entry : std::filesystem::directory_iterator(base, ec)) {
    const std::string name = entry.path().filename().string();
    const bool ours = name.size() > 4 && name.compare(name.size() - 4, 4, ".svg") == 0 &&
                      (name.rfind("time-vs-gpus", 0) == 0 || name.rfind("time-vs-seq", 0) == 0 ||
                       name == "comm-share-vs-seq.svg");
    if (ours && drawn.count(name) == 0) {
      std::error_code ignored;
      std::filesystem::remove(entry.path(), ignored);
    }
  }
  for (const auto& [name, chart] : charts)
    MESHPLAN_RETURN_IF_ERROR(write(name, plot::RenderLineChart(chart)));
  MESHPLAN_RETURN_IF_ERROR(write("best-scheme.svg", plot::RenderCategoryMap(BestSchemeMap(rows))));
  return Status::Ok();
}

}  // namespace meshplan::report
