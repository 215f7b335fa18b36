#include "report/runs/execution_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>

#include "core/base/json_writer.h"
#include "core/base/units.h"
#include "planner/schemes/registry.h"
#include "report/format/csv_record.h"
#include "report/format/text_table.h"
#include "report/format/workload_json.h"
#include "report/runs/timeline_comparison.h"

namespace meshplan::report {

namespace {

double Fraction(double part, double whole) { return whole > 0 ? part / whole : 0; }

}  // namespace

std::string Scientific(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.2e", value);
  return buffer;
}

namespace {

// The timed runs, at least the one the report describes.
int TimedRuns(const ExecutionReport& r) { return std::max(1, r.runs.stats.n); }

// The measured time compared with the prediction: the median of the timed runs.
double MeasuredTime(const ExecutionReport& r) {
  return r.runs.stats.n > 0 ? r.runs.stats.median_s : r.measured.run_s;
}

std::string InputsDescription(const ExecutionReport& r) {
  if (r.inputs_dir.empty()) return "random, seed " + std::to_string(r.seed);
  return std::string("from ") + r.inputs_dir + " (q.npy, k.npy, v.npy" +
         (HasBackward(r.plan.workload.pass) ? ", d_o.npy" : "") + ")";
}

int64_t MaxOf(const std::vector<int64_t>& v) {
  return v.empty() ? 0 : *std::max_element(v.begin(), v.end());
}

double MeanOf(const std::vector<int64_t>& v) {
  double sum = 0;
  for (int64_t x : v) sum += static_cast<double>(x);
  return v.empty() ? 0 : sum / static_cast<double>(v.size());
}

// "throughput: ..." and "memory: ..." lines.
std::string ThroughputAndMemory(const ExecutionReport& r) {
  std::string out;
  if (r.flops > 0) {
    out += "throughput: " + Fixed(TflopsPerRank(r), 3) + " TFLOP/s per rank (" +
           Scientific(r.flops) +
           " FLOPs by LongCA's count, 4 B pairs Hq d per forward and 2.5x for a backward, over " +
           std::to_string(r.ranks) + " ranks in " + FormatSeconds(MeasuredTime(r)) + ")\n";
  }
  out += "memory:    ";
  out += r.process_peak_rss_bytes > 0 ? "process peak RSS " + FormatBytes(r.process_peak_rss_bytes)
                                      : std::string("process peak RSS unknown");
  if (!r.rank_peak_bytes.empty()) {
    out += "; engine peak per rank: max " +
           FormatBytes(static_cast<double>(MaxOf(r.rank_peak_bytes))) + ", mean " +
           FormatBytes(MeanOf(r.rank_peak_bytes));
  }
  if (r.modelled_rank_peak_bytes > 0)
    out += "; planner's model " + FormatBytes(r.modelled_rank_peak_bytes) + " per rank";
  return out + "\n";
}

// "the 512-token reference block (head dim 64) took 5.12 ms before the runs and 5.30 ms after,
// 4.41 ms when calibrated (where it moved 6.2%): 1.18x the calibration's time"
std::string SpeedLine(const exec::SpeedCheck& s) {
  std::string line =
      "the " + std::to_string(exec::kReferenceBlockTokens) + "-token reference block (head dim " +
      std::to_string(s.head_dim) + ") took " + FormatSeconds(s.before_s) + " before the runs and " +
      FormatSeconds(s.after_s) + " after, " + FormatSeconds(s.calibration_s) + " when calibrated";
  if (s.calibration_spread >= 0)
    line += " (where it moved " + Fixed(s.calibration_spread * 100, 1) + "%)";
  return line + ": " + Fixed(s.Ratio(), 3) + "x the calibration's time";
}

// The prediction's range over the calibration's draws (CalibrationRecord::draw_low, draw_high)
// and where the measured time lies against it: 0 inside, else its error against the nearer end
// in percent. Only where the cluster records draws and a prediction was made.
struct DrawRangeCheck {
  bool present = false;
  double low_s = 0, high_s = 0;
  double beyond_pct = 0;
};
DrawRangeCheck CheckDrawRange(const ExecutionReport& r) {
  DrawRangeCheck d;
  const CalibrationRecord& c = r.topology.calibration;
  if (!r.have_prediction || !c.has_draw_range()) return d;
  d.present = true;
  d.low_s = r.predicted.run_s * c.draw_low;
  d.high_s = r.predicted.run_s * c.draw_high;
  const double measured = MeasuredTime(r);
  if (measured < d.low_s) d.beyond_pct = 100 * (measured / d.low_s - 1);
  if (measured > d.high_s) d.beyond_pct = 100 * (measured / d.high_s - 1);
  return d;
}

// The machine_speed object (null where not measured).
void SpeedJson(JsonWriter& j, const ExecutionReport& r) {
  if (!r.speed.measured()) {
    j.Raw("null");
    return;
  }
  const exec::SpeedCheck& s = r.speed;
  j.BeginObject();
  j.Key("reference_block_tokens");
  j.Int(exec::kReferenceBlockTokens);
  j.Key("head_dim");
  j.Int(s.head_dim);
  j.Key("calibration_s");
  j.Number(s.calibration_s);
  j.Key("calibration_spread");
  if (s.calibration_spread >= 0) {
    j.Number(s.calibration_spread);
  } else {
    j.Raw("null");
  }
  j.Key("before_s");
  j.Number(s.before_s);
  j.Key("after_s");
  j.Number(s.after_s);
  j.Key("ratio");
  j.Number(s.Ratio());
  j.Key("predicted_at_speed_s");
  if (r.have_prediction) {
    j.Number(r.predicted.run_s * s.Ratio());
  } else {
    j.Raw("null");
  }
  j.Key("error_at_speed_pct");
  if (r.have_prediction) {
    j.Number(exec::ErrorPercent(MeasuredTime(r), r.predicted.run_s * s.Ratio()));
  } else {
    j.Raw("null");
  }
  j.EndObject();
}

}  // namespace

double TflopsPerRank(const ExecutionReport& r) {
  const double time = MeasuredTime(r);
  return time > 0 && r.ranks > 0 ? r.flops / static_cast<double>(r.ranks) / time / 1e12 : 0;
}

std::string RenderExecutionTable(const ExecutionReport& r) {
  const Plan& plan = r.plan;
  const Topology& topology = r.topology;
  std::string out = "plan:      " + std::string(SchemeName(plan.params.scheme)) + " " +
                    planner::DescribeParams(plan.params) + " (" + r.plan_file + ")\n";
  out += "workload:  " + plan.workload.Describe() + (r.widened ? " (the plan's pass is bwd)" : "") +
         "; " + r.precision + "\n";
  out += "run:       " + r.run + "\n";
  out += "inputs:    " + InputsDescription(r) + "\n\n";
  const int n = TimedRuns(r);
  if (n > 1) {
    const exec::RepeatStats& s = r.runs.stats;
    out += "measured:  " + std::to_string(n) + " timed runs after " +
           std::to_string(r.runs.warm_up) + " untimed warm-up run" +
           (r.runs.warm_up == 1 ? "" : "s") + ": median " + FormatSeconds(s.median_s) + ", min " +
           FormatSeconds(s.min_s) + ", max " + FormatSeconds(s.max_s) + ", spread " +
           Fixed(s.spread * 100, 1) + "% ((max - min) / median)\n";
    out += "times:     ";
    const std::vector<double> times = r.runs.TimesS();
    for (size_t i = 0; i < times.size(); ++i) out += (i ? ", " : "") + FormatSeconds(times[i]);
    out += "\n";
    out += "median run (run " + std::to_string(s.median_run + 1) + "): " + FormatSeconds(r.wall_s) +
           " wall; last op ends at " + FormatSeconds(r.measured.run_s) + "\n";
  } else {
    out += "measured:  " + FormatSeconds(r.wall_s) + " wall; last op ends at " +
           FormatSeconds(r.measured.run_s) + "\n";
  }
  if (!r.disturbance.empty()) out += "disturbed: " + r.disturbance + "\n";
  if (r.speed.measured()) out += "speed:     " + SpeedLine(r.speed) + "\n";
  out += ThroughputAndMemory(r);
  out += "per rank over " + std::to_string(r.ranks) + " ranks (measured" +
         (n > 1 ? ", the median run" : "") + "):\n";
  const exec::RunTimeline& m = r.measured;
  out += Columns(
      {{"", "min", "mean", "max"},
       {"compute", FormatSeconds(m.compute.min), FormatSeconds(m.compute.mean),
        FormatSeconds(m.compute.max)},
       {"exposed comm", FormatSeconds(m.exposed.min), FormatSeconds(m.exposed.mean),
        FormatSeconds(m.exposed.max)},
       {"idle", FormatSeconds(m.idle.min), FormatSeconds(m.idle.mean), FormatSeconds(m.idle.max)}},
      "  ");
  out += "\npredicted vs measured (simulated on " + std::to_string(topology.num_gpus()) + " x " +
         topology.gpu.model + ", " + topology.name + ", attention kernel " +
         topology.gpu.attention_kernel + "):\n";
  if (r.have_prediction) {
    const exec::RunTimeline& p = r.predicted;
    auto pct = [](double part, double whole) {
      return Fixed(Fraction(part, whole) * 100, 1) + "%";
    };
    const double measured = MeasuredTime(r);
    const Errors errors = r.compare_times ? Errors::kWithErrors : Errors::kSideBySide;
    // Each pair of times, with its error where the times are comparable.
    auto pair = [&](std::string label, double predicted_value, double measured_value) {
      std::vector<std::string> row = {std::move(label), FormatSeconds(predicted_value),
                                      FormatSeconds(measured_value)};
      if (r.compare_times) row.push_back(ErrorCell(ErrorPct(measured_value, predicted_value)));
      return row;
    };
    std::vector<std::string> header = {"", "predicted", "measured"};
    if (r.compare_times) header.push_back("error vs predicted");
    std::vector<std::vector<std::string>> rows = {
        header,
        pair(n > 1 ? "time (median of " + std::to_string(n) + ")" : "time", p.run_s, measured)};
    // The prediction at the machine's speed of the moment (SpeedCheck): the error the model
    // makes, without the machine's drift since it was calibrated.
    if (r.speed.measured()) {
      rows.push_back(pair("time at this speed (x" + Fixed(r.speed.Ratio(), 3) + ")",
                          p.run_s * r.speed.Ratio(), measured));
    }
    // The range another calibration of the machine could have predicted (calibrate --draws).
    if (const DrawRangeCheck d = CheckDrawRange(r); d.present) {
      std::vector<std::string> row = {
          "range over " + std::to_string(topology.calibration.draws) + " draws",
          FormatSeconds(d.low_s) + " - " + FormatSeconds(d.high_s), FormatSeconds(measured)};
      if (r.compare_times)
        row.push_back(d.beyond_pct == 0 ? "inside" : ErrorCell(d.beyond_pct) + " beyond");
      rows.push_back(std::move(row));
    }
    rows.push_back(pair("compute (mean)", p.compute.mean, m.compute.mean));
    rows.push_back(pair("exposed comm (mean)", p.exposed.mean, m.exposed.mean));
    rows.push_back(pair("idle (mean)", p.idle.mean, m.idle.mean));
    rows.push_back(
        {"exposed comm / time", pct(p.exposed.mean, p.run_s), pct(m.exposed.mean, m.run_s)});
    rows.push_back({"compute / time", pct(p.compute.mean, p.run_s), pct(m.compute.mean, m.run_s)});
    out += Columns(rows, "  ");
    // A topology whose ranks share devices describes a machine like this one (meshplan calibrate
    // writes one): its times are meant to be compared, but only warm runs, as the prediction is a
    // steady-state step (docs/fidelity.md: a first run was 20-25% slower).
    if (r.backend == "cpu" && topology.gpu.ranks_per_device > 1) {
      if (n <= 1) {
        out +=
            "  (one run: its first-run costs, every buffer faulted in and threads started, are not "
            "in the "
            "prediction; --repeat N adds an untimed warm-up run)\n";
      }
    } else if (r.backend == "cpu") {
      out += r.compare_times
                 ? "  (the CPU executor's speed is not the cluster's: compare the schedule's "
                   "shape, the ratios, not the times)\n"
                 : "  (the CPU executor's speed is not the cluster's, so no errors are shown "
                   "(--errors shows them): compare the shares; `meshplan calibrate` describes "
                   "this machine)\n";
    } else {
      out += "  (measured on this machine's GPUs; the prediction is for the plan's cluster)\n";
    }
    out += "\n" + RenderRankComparison(p, m, errors);
    out += "\n" + RenderOpClassComparison(p, m, errors);
  } else {
    out += "  unavailable: " + r.prediction_error + "\n";
  }
  if (r.checked) {
    out +=
        "\ncheck" +
        (n > 1 ? " (outputs of timed run 1 of " + std::to_string(n) + ")" : std::string()) +
        ": max relative error (max |x - ref| / max |ref|) against float64 attention, tolerance " +
        Scientific(r.check.tolerance) + ":\n";
    std::vector<std::vector<std::string>> rows;
    for (const auto& [name, error] : r.check.errors) {
      rows.push_back(
          {name, Scientific(error), error <= r.check.tolerance ? "ok" : "EXCEEDS TOLERANCE"});
    }
    out += Columns(rows, "  ");
    out += r.check.passed() ? "check passed\n" : "check FAILED\n";
  }
  if (!r.written.empty()) {
    out += "\noutputs:   ";
    for (size_t i = 0; i < r.written.size(); ++i) out += (i ? ", " : "") + r.written[i];
    out += " in " + r.outputs_dir + "\n";
  }
  return out;
}

namespace {

void TimelineJson(JsonWriter& j, const exec::RunTimeline& t) {
  j.BeginObject();
  j.Key("time_s");
  j.Number(t.run_s);
  for (const auto& [key, s] : {std::pair<const char*, const exec::Spread*>{"compute_s", &t.compute},
                               {"exposed_comm_s", &t.exposed},
                               {"idle_s", &t.idle}}) {
    j.Key(key);
    j.BeginObject();
    j.Key("min");
    j.Number(s->min);
    j.Key("mean");
    j.Number(s->mean);
    j.Key("max");
    j.Number(s->max);
    j.EndObject();
  }
  j.Key("exposed_comm_fraction");
  j.Number(Fraction(t.exposed.mean, t.run_s));
  TimelineDetailJson(j, t);
  j.EndObject();
}

// The timed runs: "n", "warm_up", "median_s", "min_s", "max_s", "spread", "times_s", the median
// run (1-based) and the median's signed error against the prediction in percent (null without one).
void RepeatJson(JsonWriter& j, const ExecutionReport& r) {
  exec::RepeatStats s = r.runs.stats;
  std::vector<double> times = r.runs.TimesS();
  if (s.n == 0) {  // one run, described by `measured`
    times = {r.measured.run_s};
    s = exec::RepeatStatsOf(times);
  }
  j.BeginObject();
  j.Key("n");
  j.Int(s.n);
  j.Key("warm_up");
  j.Int(r.runs.warm_up);
  j.Key("median_s");
  j.Number(s.median_s);
  j.Key("min_s");
  j.Number(s.min_s);
  j.Key("max_s");
  j.Number(s.max_s);
  j.Key("spread");
  j.Number(s.spread);
  j.Key("times_s");
  j.BeginArray();
  for (double t : times) j.Number(t);
  j.EndArray();
  j.Key("median_run");
  j.Int(static_cast<long long>(s.median_run) + 1);
  j.Key("median_error_pct");
  if (r.have_prediction) {
    j.Number(exec::ErrorPercent(s.median_s, r.predicted.run_s));
  } else {
    j.Raw("null");
  }
  j.EndObject();
}

}  // namespace

std::string RenderExecutionJson(const ExecutionReport& r) {
  const Plan& plan = r.plan;
  JsonWriter j;
  j.BeginObject();
  j.Key("plan");
  j.BeginObject();
  j.Key("file");
  j.String(r.plan_file);
  j.Key("scheme");
  j.String(SchemeName(plan.params.scheme));
  j.Key("parameters");
  j.String(planner::DescribeParams(plan.params));
  j.Key("workload");
  WriteWorkloadJson(j, plan.workload);
  j.Key("pass_widened");
  j.Bool(r.widened);
  j.EndObject();
  j.Key("backend");
  j.String(r.backend);
  j.Key("transport");
  j.String(r.transport);
  j.Key("run");
  j.String(r.run);
  j.Key("precision");
  j.String(r.precision);
  j.Key("ranks");
  j.Int(r.ranks);
  j.Key("inputs");
  j.BeginObject();
  j.Key("source");
  j.String(r.inputs_dir.empty() ? "random" : r.inputs_dir);
  if (r.inputs_dir.empty()) {
    j.Key("seed");
    j.Raw(std::to_string(r.seed));
  }
  j.EndObject();
  j.Key("repeat");
  RepeatJson(j, r);
  j.Key("wall_s");
  j.Number(r.wall_s);
  j.Key("flops");
  j.Number(r.flops);
  j.Key("tflops_per_rank");
  j.Number(TflopsPerRank(r));
  j.Key("memory");
  j.BeginObject();
  j.Key("process_peak_rss_bytes");
  j.Bytes(r.process_peak_rss_bytes);
  j.Key("rank_peak_bytes");
  j.BeginArray();
  for (int64_t b : r.rank_peak_bytes) j.Int(b);
  j.EndArray();
  j.Key("modelled_rank_peak_bytes");
  j.Bytes(r.modelled_rank_peak_bytes);
  j.EndObject();
  j.Key("measured");
  TimelineJson(j, r.measured);
  j.Key("predicted");
  if (r.have_prediction) {
    TimelineJson(j, r.predicted);
  } else {
    j.Raw("null");
    j.Key("prediction_error");
    j.String(r.prediction_error);
  }
  j.Key("error_pct");
  if (r.have_prediction) {
    ErrorsJson(j, r.predicted, r.measured, MeasuredTime(r));
  } else {
    j.Raw("null");
  }
  j.Key("times_comparable");
  j.Bool(r.compare_times);
  j.Key("other_processes_cores");
  if (r.runs.foreign_cores >= 0) {
    j.Number(r.runs.foreign_cores);
  } else {
    j.Raw("null");
  }
  j.Key("disturbance");
  if (r.disturbance.empty()) {
    j.Raw("null");
  } else {
    j.String(r.disturbance);
  }
  j.Key("machine_speed");
  SpeedJson(j, r);
  j.Key("draw_range");
  if (const DrawRangeCheck d = CheckDrawRange(r); d.present) {
    j.BeginObject();
    j.Key("draws");
    j.Int(r.topology.calibration.draws);
    j.Key("low_s");
    j.Number(d.low_s);
    j.Key("high_s");
    j.Number(d.high_s);
    j.Key("beyond_pct");
    j.Number(d.beyond_pct);
    j.EndObject();
  } else {
    j.Raw("null");
  }
  j.Key("topology");
  j.String(r.topology.name);
  if (r.checked) {
    j.Key("check");
    j.BeginObject();
    j.Key("run");
    j.Int(1);  // the first timed run's outputs
    j.Key("tolerance");
    j.Number(r.check.tolerance);
    j.Key("passed");
    j.Bool(r.check.passed());
    j.Key("max_relative_error");
    j.BeginObject();
    for (const auto& [name, error] : r.check.errors) {
      j.Key(name);
      if (std::isfinite(error)) {
        j.Number(error);
      } else {
        j.String("inf");
      }
    }
    j.EndObject();
    j.EndObject();
  }
  if (!r.written.empty()) {
    j.Key("outputs");
    j.BeginObject();
    j.Key("dir");
    j.String(r.outputs_dir);
    j.Key("files");
    j.BeginArray();
    for (const std::string& name : r.written) j.String(name);
    j.EndArray();
    j.EndObject();
  }
  j.EndObject();
  return j.Take() + "\n";
}

std::string ExecutionCsv(const ExecutionReport& r, bool with_header) {
  CsvRecord c;
  c.Add("plan", r.plan_file);
  c.Add("scheme", std::string(SchemeName(r.plan.params.scheme)));
  c.Add("parameters", planner::DescribeParams(r.plan.params));
  AddWorkloadColumns(r.plan.workload, c);
  c.Add("backend", r.backend);
  c.Add("transport", r.transport);
  c.AddInt("ranks", r.ranks);
  c.Add("topology", r.topology.name);
  c.AddInt("runs", TimedRuns(r));
  const bool repeated = r.runs.stats.n > 0;
  c.AddNumber("time_s", MeasuredTime(r));
  c.AddNumber("min_s", repeated ? r.runs.stats.min_s : MeasuredTime(r));
  c.AddNumber("max_s", repeated ? r.runs.stats.max_s : MeasuredTime(r));
  c.AddNumber("wall_s", r.wall_s);
  c.AddNumber("compute_mean_s", r.measured.compute.mean);
  c.AddNumber("exposed_comm_mean_s", r.measured.exposed.mean);
  c.AddNumber("idle_mean_s", r.measured.idle.mean);
  const double absent = std::numeric_limits<double>::quiet_NaN();  // an empty field
  const std::optional<double> error =
      r.have_prediction ? ErrorPct(MeasuredTime(r), r.predicted.run_s) : std::nullopt;
  c.AddNumber("predicted_s", r.have_prediction ? r.predicted.run_s : absent);
  c.AddNumber("error_pct", error ? *error : absent);
  c.Add("times_comparable", r.compare_times ? "true" : "false");
  c.AddNumber("other_processes_cores", r.runs.foreign_cores >= 0 ? r.runs.foreign_cores : absent);
  // The prediction at the machine's speed of the moment (empty where not measured).
  const bool at_speed = r.speed.measured() && r.have_prediction;
  c.AddNumber("speed_ratio", r.speed.measured() ? r.speed.Ratio() : absent);
  c.AddNumber(
      "error_at_speed_pct",
      at_speed ? exec::ErrorPercent(MeasuredTime(r), r.predicted.run_s * r.speed.Ratio()) : absent);
  // The prediction's range over the calibration's draws (empty where it records none).
  const DrawRangeCheck draw_range = CheckDrawRange(r);
  c.AddNumber("draw_low_s", draw_range.present ? draw_range.low_s : absent);
  c.AddNumber("draw_high_s", draw_range.present ? draw_range.high_s : absent);
  c.AddNumber("beyond_draw_range_pct", draw_range.present ? draw_range.beyond_pct : absent);
  c.AddNumber("tflops_per_rank", TflopsPerRank(r));
  c.AddInt("process_peak_rss_bytes", std::llround(r.process_peak_rss_bytes));
  // Empty where not known here (the other processes of an MPI job).
  c.Add("rank_peak_bytes_max",
        r.rank_peak_bytes.empty() ? "" : std::to_string(MaxOf(r.rank_peak_bytes)));
  c.AddInt("modelled_rank_peak_bytes", std::llround(r.modelled_rank_peak_bytes));
  c.Add("check", !r.checked ? "" : r.check.passed() ? "passed" : "failed");
  double worst = r.checked ? 0 : absent;
  for (const auto& [name, e] : r.check.errors) worst = std::max(worst, e);
  c.AddNumber("check_max_relative_error", worst);
  return (with_header ? c.Header() : "") + c.Row();
}

std::string DescribeCheckFailure(const exec::OutputCheck& check) {
  std::string worst;
  for (const auto& [name, error] : check.errors) {
    if (!(error <= check.tolerance))
      worst += (worst.empty() ? "" : ", ") + name + " " + Scientific(error);
  }
  return "max relative error above " + Scientific(check.tolerance) + ": " + worst;
}

}  // namespace meshplan::report
