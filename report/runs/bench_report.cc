#include "report/runs/bench_report.h"

#include <filesystem>
#include <set>

#include "core/base/atomic_file.h"
#include "core/base/csv.h"
#include "core/base/json_writer.h"
#include "core/base/units.h"
#include "planner/schemes/registry.h"
#include "report/format/text_table.h"
#include "report/format/workload_json.h"

namespace meshplan::report {
namespace {

using capacity::BenchOutcome;
using capacity::BenchRow;

constexpr double kMiB = 1024.0 * 1024.0;

// Masks in first-seen order.
std::vector<std::string> MasksOf(const std::vector<BenchRow>& rows) {
  std::vector<std::string> masks;
  for (const BenchRow& r : rows) {
    if (std::find(masks.begin(), masks.end(), r.mask) == masks.end()) masks.push_back(r.mask);
  }
  return masks;
}

std::string SignedPercent(double pct) { return (pct >= 0 ? "+" : "") + Fixed(pct, 1) + "%"; }

// A file name part for a mask ("window:512" -> "window-512").
std::string FileSafe(std::string text) {
  for (char& c : text) {
    if (c == ':' || c == '/' || c == ' ' || c == ',') c = '-';
  }
  return text;
}

}  // namespace

std::string RenderBenchTable(const std::vector<BenchRow>& rows, const BenchContext& context) {
  std::string out = "bench:     " + context.workload + "; " + std::to_string(context.repeat) +
                    " timed run" + (context.repeat == 1 ? "" : "s") + " per point (median)\n";
  out += "run:       " + context.run + "\n";
  out += "predicted: simulated on " + context.topology + "\n";
  for (const std::string& mask : MasksOf(rows)) {
    out += "\nmask " + mask + ":\n";
    std::vector<std::vector<std::string>> table = {
        {"seq", "scheme", "plan", "predicted", "measured", "error", "TFLOP/s/rank", "predicted",
         "spread", "peak/rank", "model/rank", "process RSS"}};
    std::vector<std::string> notes;
    for (const BenchRow& r : rows) {
      if (r.mask != mask) continue;
      std::vector<std::string> line = {FormatCount(r.seq_len), std::string(SchemeName(r.scheme))};
      if (r.outcome == BenchOutcome::kRan) {
        line.insert(
            line.end(),
            {planner::DescribeParams(r.params), FormatSeconds(r.predicted_s),
             FormatSeconds(r.median_s), SignedPercent(r.ErrorPercent()),
             Fixed(r.MeasuredTflopsPerRank(), 4), Fixed(r.PredictedTflopsPerRank(), 4),
             Fixed(r.spread * 100, 1) + "%", FormatBytes(r.rank_peak_bytes),
             FormatBytes(r.modelled_rank_peak_bytes), FormatBytes(r.process_peak_rss_bytes)});
      } else {
        line.push_back(std::string(capacity::BenchOutcomeName(r.outcome)) + " (note " +
                       std::to_string(notes.size() + 1) + ")");
        notes.push_back(r.reason);
      }
      table.push_back(std::move(line));
    }
    out += Columns(table, "  ", true);
    for (size_t i = 0; i < notes.size(); ++i)
      out += "  note " + std::to_string(i + 1) + ": " + notes[i] + "\n";
  }
  return out;
}

std::string BenchCsv(const std::vector<BenchRow>& rows) {
  std::string out =
      "mask,seq_len,scheme,ranks,outcome,parameters,flops,predicted_s,median_s,min_s,max_s,spread,"
      "error_pct,"
      "tflops_per_rank,predicted_tflops_per_rank,rank_peak_bytes,modelled_rank_peak_bytes,process_"
      "peak_rss_bytes,"
      "reason\n";
  for (const BenchRow& r : rows) {
    out += CsvField(r.mask) + "," + std::to_string(r.seq_len) + "," +
           std::string(SchemeName(r.scheme)) + "," + std::to_string(r.ranks) + "," +
           CsvField(std::string(capacity::BenchOutcomeName(r.outcome))) + ",";
    if (r.outcome == BenchOutcome::kRan) {
      out += CsvField(planner::DescribeParams(r.params));
      for (double v : {r.flops, r.predicted_s, r.median_s, r.min_s, r.max_s, r.spread,
                       r.ErrorPercent(), r.MeasuredTflopsPerRank(), r.PredictedTflopsPerRank(),
                       r.rank_peak_bytes, r.modelled_rank_peak_bytes, r.process_peak_rss_bytes}) {
        out += "," + CsvNumber(v);
      }
      out += ",\n";
    } else {
      out +=
          (r.outcome == BenchOutcome::kNoPlan ? "" : CsvField(planner::DescribeParams(r.params))) +
          ",,,,,,,,,,,,," + CsvField(r.reason) + "\n";
    }
  }
  return out;
}

std::string BenchJson(const std::vector<BenchRow>& rows, const BenchContext& context) {
  JsonWriter j;
  j.BeginObject();
  j.Key("context");
  j.BeginObject();
  j.Key("topology");
  j.String(context.topology);
  j.Key("run");
  j.String(context.run);
  j.Key("workload");
  WriteWorkloadJson(j, context.base, context.workload, {.seq = false, .mask = false});
  j.Key("repeat");
  j.Int(context.repeat);
  j.EndObject();
  j.Key("rows");
  j.BeginArray();
  for (const BenchRow& r : rows) {
    j.BeginObject();
    j.Key("mask");
    j.String(r.mask);
    j.Key("seq_len");
    j.Int(r.seq_len);
    j.Key("scheme");
    j.String(SchemeName(r.scheme));
    j.Key("ranks");
    j.Int(r.ranks);
    j.Key("outcome");
    j.String(capacity::BenchOutcomeName(r.outcome));
    if (r.outcome != BenchOutcome::kNoPlan) {
      j.Key("parameters");
      j.String(planner::DescribeParams(r.params));
    }
    if (r.outcome == BenchOutcome::kRan) {
      const std::pair<const char*, double> numbers[] = {
          {"flops", r.flops},
          {"predicted_s", r.predicted_s},
          {"median_s", r.median_s},
          {"min_s", r.min_s},
          {"max_s", r.max_s},
          {"spread", r.spread},
          {"error_pct", r.ErrorPercent()},
          {"tflops_per_rank", r.MeasuredTflopsPerRank()},
          {"predicted_tflops_per_rank", r.PredictedTflopsPerRank()},
          {"rank_peak_bytes", r.rank_peak_bytes},
          {"modelled_rank_peak_bytes", r.modelled_rank_peak_bytes},
          {"process_peak_rss_bytes", r.process_peak_rss_bytes}};
      for (const auto& [key, value] : numbers) {
        j.Key(key);
        j.Number(value);
      }
    } else {
      j.Key("reason");
      j.String(r.reason);
    }
    j.EndObject();
  }
  j.EndArray();
  j.EndObject();
  return j.Take() + "\n";
}

namespace {

// Per scheme (scheme order) two series over the rows of `mask` that ran: `first(row)` named by the
// scheme and `second(row)` named "<scheme> (<second_name>)".
template <typename First, typename Second>
std::vector<plot::Series> PairedSeries(const std::vector<BenchRow>& rows, const std::string& mask,
                                       First first, Second second, const std::string& second_name) {
  std::vector<plot::Series> series;
  for (const Scheme& scheme : planner::AllSchemes()) {
    plot::Series measured{std::string(SchemeName(scheme)), {}};
    plot::Series other{std::string(SchemeName(scheme)) + " (" + second_name + ")", {}};
    for (const BenchRow& r : rows) {
      if (r.mask != mask || r.scheme != scheme || r.outcome != BenchOutcome::kRan) continue;
      const double x = static_cast<double>(r.seq_len);
      measured.points.emplace_back(x, first(r));
      other.points.emplace_back(x, second(r));
    }
    if (measured.points.empty()) continue;
    series.push_back(std::move(measured));
    series.push_back(std::move(other));
  }
  return series;
}

}  // namespace

plot::LineChart BenchTflopsChart(const std::vector<BenchRow>& rows, const std::string& mask) {
  plot::LineChart chart;
  chart.title = "TFLOP/s per rank, mask " + mask + " (measured; predicted by the simulator)";
  chart.x_label = "sequence length (tokens)";
  chart.y_label = "TFLOP/s per rank";
  chart.log_x = true;
  chart.series = PairedSeries(
      rows, mask, [](const BenchRow& r) { return r.MeasuredTflopsPerRank(); },
      [](const BenchRow& r) { return r.PredictedTflopsPerRank(); }, "predicted");
  return chart;
}

plot::LineChart BenchMemoryChart(const std::vector<BenchRow>& rows, const std::string& mask) {
  plot::LineChart chart;
  chart.title =
      "peak memory per rank, mask " + mask + " (measured engine peak; the planner's model)";
  chart.x_label = "sequence length (tokens)";
  chart.y_label = "peak memory per rank (MiB)";
  chart.log_x = true;
  chart.log_y = true;
  chart.series = PairedSeries(
      rows, mask, [](const BenchRow& r) { return r.rank_peak_bytes / kMiB; },
      [](const BenchRow& r) { return r.modelled_rank_peak_bytes / kMiB; }, "model");
  return chart;
}

Status WriteBenchCharts(const std::vector<BenchRow>& rows, const std::string& dir) {
  const bool any = std::any_of(rows.begin(), rows.end(),
                               [](const BenchRow& r) { return r.outcome == BenchOutcome::kRan; });
  if (!any) return Status::Invalid("no bench point ran: nothing to chart");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::Io(dir + ": cannot create directory (" + ec.message() + ")");
  const std::filesystem::path base(dir);
  for (const std::string& mask : MasksOf(rows)) {
    const std::string name = FileSafe(mask);
    MESHPLAN_RETURN_IF_ERROR(
        WriteFileAtomically((base / ("tflops-" + name + ".svg")).string(),
                            plot::RenderLineChart(BenchTflopsChart(rows, mask))));
    MESHPLAN_RETURN_IF_ERROR(
        WriteFileAtomically((base / ("memory-" + name + ".svg")).string(),
                            plot::RenderLineChart(BenchMemoryChart(rows, mask))));
  }
  return Status::Ok();
}

}  // namespace meshplan::report
