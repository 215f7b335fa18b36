// The end of `meshplan execute`: the check against plain attention, the .npy outputs, and the
// report (measured timeline next to the simulator's prediction).
#include "tools/execute_run.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "core/json_writer.h"
#include "core/units.h"
#include "executor/output_check.h"
#include "executor/run_files.h"
#include "executor/timeline.h"
#include "simulator/plan_simulation.h"
#include "tools/cli_common.h"
#include "report/text_table.h"

namespace meshplan::tools {
namespace {

namespace fs = std::filesystem;
using exec::AttentionTensors;
using exec::OpTiming;
using exec::TensorD;
using exec::TensorF;

// ---- what a run produced, and the report --------------------------------------------------------

exec::RunTimeline PredictedTimeline(const sim::SimResult& result) {
  std::vector<double> compute, exposed, idle;
  for (const sim::RankStats& s : result.ranks) {
    compute.push_back(s.compute_s);
    exposed.push_back(s.exposed_comm_s);
    idle.push_back(s.idle_s);
  }
  exec::RunTimeline t;
  t.run_s = result.total_s;
  t.compute = exec::SpreadOf(compute);
  t.exposed = exec::SpreadOf(exposed);
  t.idle = exec::SpreadOf(idle);
  return t;
}

double Fraction(double part, double whole) { return whole > 0 ? part / whole : 0; }

struct Report {
  const ExecuteFlags* flags = nullptr;
  const Prepared* prepared = nullptr;
  int ranks = 0;
  double wall_s = 0;
  exec::RunTimeline measured;
  bool have_prediction = false;
  exec::RunTimeline predicted;
  std::string prediction_error;  // why there is no prediction
  bool checked = false;
  exec::OutputCheck check;
  std::vector<std::string> written;  // output files (names in flags->outputs)
  std::string run;                    // what ran where
};

std::string Scientific(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.2e", value);
  return buffer;
}

std::string InputsDescription(const ExecuteFlags& flags, const Workload& w) {
  if (flags.inputs.empty()) return "random, seed " + std::to_string(flags.seed);
  return std::string("from ") + flags.inputs + " (q.npy, k.npy, v.npy" +
         (HasBackward(w.pass) ? ", d_o.npy" : "") + ")";
}

std::string RenderTable(const Report& r) {
  const Plan& plan = r.prepared->run.plan;
  const Topology& topology = r.prepared->topology;
  std::string out = "plan:      " + std::string(SchemeName(plan.params.scheme)) + " " +
                    plan.params.Describe() + " (" + r.flags->plan + ")\n";
  out += "workload:  " + plan.workload.Describe() +
         (r.prepared->run.widened ? " (the plan's pass is bwd)" : "") + "; " + r.prepared->precision + "\n";
  out += "run:       " + r.run + "\n";
  out += "inputs:    " + InputsDescription(*r.flags, plan.workload) + "\n\n";
  out += "measured:  " + FormatSeconds(r.wall_s) + " wall; last op ends at " +
         FormatSeconds(r.measured.run_s) + "\n";
  out += "per rank over " + std::to_string(r.ranks) + " ranks (measured):\n";
  const exec::RunTimeline& m = r.measured;
  out += report::Columns(
      {{"", "min", "mean", "max"},
       {"compute", FormatSeconds(m.compute.min), FormatSeconds(m.compute.mean),
        FormatSeconds(m.compute.max)},
       {"exposed comm", FormatSeconds(m.exposed.min), FormatSeconds(m.exposed.mean),
        FormatSeconds(m.exposed.max)},
       {"idle", FormatSeconds(m.idle.min), FormatSeconds(m.idle.mean), FormatSeconds(m.idle.max)}},
      "  ");
  out += "\npredicted vs measured (simulated on " + std::to_string(topology.num_gpus()) + " x " +
         topology.gpu.model + ", " + topology.name + "):\n";
  if (r.have_prediction) {
    const exec::RunTimeline& p = r.predicted;
    auto pct = [](double part, double whole) {
      return report::Fixed(Fraction(part, whole) * 100, 1) + "%";
    };
    out += report::Columns(
        {{"", "predicted", "measured"},
         {"time", FormatSeconds(p.run_s), FormatSeconds(m.run_s)},
         {"compute (mean)", FormatSeconds(p.compute.mean), FormatSeconds(m.compute.mean)},
         {"exposed comm (mean)", FormatSeconds(p.exposed.mean), FormatSeconds(m.exposed.mean)},
         {"idle (mean)", FormatSeconds(p.idle.mean), FormatSeconds(m.idle.mean)},
         {"exposed comm / time", pct(p.exposed.mean, p.run_s), pct(m.exposed.mean, m.run_s)},
         {"compute / time", pct(p.compute.mean, p.run_s), pct(m.compute.mean, m.run_s)}},
        "  ");
    out += r.flags->backend == "cpu"
               ? "  (the CPU executor's speed is not the cluster's: compare the schedule's shape, the "
                 "ratios, not the times)\n"
               : "  (measured on this machine's GPUs; the prediction is for the plan's cluster)\n";
  } else {
    out += "  unavailable: " + r.prediction_error + "\n";
  }
  if (r.checked) {
    out +=
        "\ncheck: max relative error (max |x - ref| / max |ref|) against float64 attention, "
        "tolerance " +
        Scientific(r.check.tolerance) + ":\n";
    std::vector<std::vector<std::string>> rows;
    for (const auto& [name, error] : r.check.errors) {
      rows.push_back(
          {name, Scientific(error), error <= r.check.tolerance ? "ok" : "EXCEEDS TOLERANCE"});
    }
    out += report::Columns(rows, "  ");
    out += r.check.passed() ? "check passed\n" : "check FAILED\n";
  }
  if (!r.written.empty()) {
    out += "\noutputs:   ";
    for (size_t i = 0; i < r.written.size(); ++i) out += (i ? ", " : "") + r.written[i];
    out += " in " + r.flags->outputs + "\n";
  }
  return out;
}

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
  j.EndObject();
}

std::string RenderJson(const Report& r) {
  const Plan& plan = r.prepared->run.plan;
  JsonWriter j;
  j.BeginObject();
  j.Key("plan");
  j.BeginObject();
  j.Key("file");
  j.String(r.flags->plan);
  j.Key("scheme");
  j.String(SchemeName(plan.params.scheme));
  j.Key("parameters");
  j.String(plan.params.Describe());
  j.Key("workload");
  j.String(plan.workload.Describe());
  j.Key("pass_widened");
  j.Bool(r.prepared->run.widened);
  j.EndObject();
  j.Key("backend");
  j.String(r.flags->backend);
  j.Key("transport");
  j.String(r.flags->transport);
  j.Key("run");
  j.String(r.run);
  j.Key("precision");
  j.String(r.prepared->precision);
  j.Key("ranks");
  j.Int(r.ranks);
  j.Key("inputs");
  j.BeginObject();
  j.Key("source");
  j.String(r.flags->inputs.empty() ? "random" : r.flags->inputs);
  if (r.flags->inputs.empty()) {
    j.Key("seed");
    j.Raw(std::to_string(r.flags->seed));
  }
  j.EndObject();
  j.Key("wall_s");
  j.Number(r.wall_s);
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
  j.Key("topology");
  j.String(r.prepared->topology.name);
  if (r.checked) {
    j.Key("check");
    j.BeginObject();
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
    j.String(r.flags->outputs);
    j.Key("files");
    j.BeginArray();
    for (const std::string& name : r.written) j.String(name);
    j.EndArray();
    j.EndObject();
  }
  j.EndObject();
  return j.Take() + "\n";
}

}  // namespace

// After a successful run (on rank 0 for MPI): check, write outputs, print. Returns the exit code.
int FinishExecution(const ExecuteFlags& flags, const Prepared& p, const AttentionTensors<float>& outputs,
                    const std::vector<std::vector<OpTiming>>& timings, double wall_s, const std::string& run) {
  Report r;
  r.run = run;
  r.flags = &flags;
  r.prepared = &p;
  r.ranks = static_cast<int>(p.run.schedule.num_ranks);
  r.wall_s = wall_s;
  r.measured = exec::MeasureTimeline(p.run.schedule, timings);
  sim::SimOptions options;
  options.record_op_times = false;
  auto sim = sim::SimulatePlan(p.run.plan, p.topology, options);
  if (sim.ok()) {
    r.have_prediction = true;
    r.predicted = PredictedTimeline(sim->result);
  } else {
    r.prediction_error = sim.status().message();
  }
  if (flags.check) {
    r.checked = true;
    r.check = exec::CheckOutputs(p.run.plan.workload, p.run.inputs, outputs, p.run.tolerance);
  }
  const bool passed = !r.checked || r.check.passed();
  if (passed && !flags.outputs.empty()) {
    auto written = exec::WriteOutputFiles(flags.outputs, p.run.plan.workload, outputs);
    if (!written.ok()) return ReportError(written.status());
    r.written = std::move(written).value();
  }
  std::fputs((flags.format == "json" ? RenderJson(r) : RenderTable(r)).c_str(), stdout);
  std::fflush(stdout);
  if (!passed) {
    std::string worst;
    for (const auto& [name, error] : r.check.errors) {
      if (!(error <= r.check.tolerance))
        worst += (worst.empty() ? "" : ", ") + name + " " + Scientific(error);
    }
    std::fprintf(stderr, "meshplan: error: check failed: max relative error above %s: %s%s\n",
                 Scientific(r.check.tolerance).c_str(), worst.c_str(),
                 flags.outputs.empty() ? "" : "; no outputs written");
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace meshplan::tools
