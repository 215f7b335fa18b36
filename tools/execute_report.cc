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
#include "executor/npy.h"
#include "executor/reference.h"
#include "simulator/plan_simulation.h"
#include "tools/cli_common.h"
#include "tools/text_format.h"

namespace meshplan::tools {
namespace {

namespace fs = std::filesystem;
using exec::AttentionTensors;
using exec::OpTiming;
using exec::TensorD;
using exec::TensorF;

TensorD ToDouble(const TensorF& t) {
  TensorD d(t.batch, t.tokens, t.heads, t.dim);
  for (size_t i = 0; i < t.data.size(); ++i) d.data[i] = t.data[i];
  return d;
}

// ---- what a run produced, and the report --------------------------------------------------------

struct Spread {
  double min = 0, mean = 0, max = 0;
};

Spread SpreadOf(const std::vector<double>& values) {
  Spread s;
  if (values.empty()) return s;
  s.min = *std::min_element(values.begin(), values.end());
  s.max = *std::max_element(values.begin(), values.end());
  double sum = 0;
  for (double v : values) sum += v;
  s.mean = sum / static_cast<double>(values.size());
  return s;
}

// Per-rank timeline, defined as the simulator's (sim::RankStats): compute = compute-stream busy
// time (computes and merges), exposed communication = the rank's last op end - compute, idle =
// the run's end (the latest last op end) - the rank's last op end.
struct Timeline {
  double run_s = 0;  // latest op end over all ranks, from the run's start
  Spread compute, exposed, idle;
};

Timeline MeasureTimeline(const Schedule& schedule,
                         const std::vector<std::vector<OpTiming>>& timings) {
  std::vector<double> compute, last_end;
  for (size_t r = 0; r < timings.size(); ++r) {
    const std::vector<Op>& ops = schedule.ranks[r].ops;
    double busy = 0, end = 0;
    for (size_t i = 0; i < timings[r].size() && i < ops.size(); ++i) {
      if (ops[i].stream == StreamId::kCompute) busy += timings[r][i].end_s - timings[r][i].start_s;
      end = std::max(end, timings[r][i].end_s);
    }
    compute.push_back(busy);
    last_end.push_back(end);
  }
  Timeline t;
  t.run_s = last_end.empty() ? 0 : *std::max_element(last_end.begin(), last_end.end());
  std::vector<double> exposed, idle;
  for (size_t r = 0; r < last_end.size(); ++r) {
    exposed.push_back(std::max(0.0, last_end[r] - compute[r]));
    idle.push_back(t.run_s - last_end[r]);
  }
  t.compute = SpreadOf(compute);
  t.exposed = SpreadOf(exposed);
  t.idle = SpreadOf(idle);
  return t;
}

Timeline PredictedTimeline(const sim::SimResult& result) {
  std::vector<double> compute, exposed, idle;
  for (const sim::RankStats& s : result.ranks) {
    compute.push_back(s.compute_s);
    exposed.push_back(s.exposed_comm_s);
    idle.push_back(s.idle_s);
  }
  Timeline t;
  t.run_s = result.total_s;
  t.compute = SpreadOf(compute);
  t.exposed = SpreadOf(exposed);
  t.idle = SpreadOf(idle);
  return t;
}

double Fraction(double part, double whole) { return whole > 0 ? part / whole : 0; }

// max |x - ref| / max |ref| over the finite reference values; a non-finite result where the
// reference is finite (or an LSE of -inf where the reference has one, the other way round) is an
// infinite error, so NaNs never pass.
double MaxRelativeError(const TensorF& got, const TensorD& want) {
  double worst = 0, scale = 0;
  for (size_t i = 0; i < want.data.size(); ++i) {
    const double x = got.data[i], ref = want.data[i];
    if (!std::isfinite(ref)) {
      if (!(x == ref)) return INFINITY;
      continue;
    }
    if (!std::isfinite(x)) return INFINITY;
    worst = std::max(worst, std::abs(x - ref));
    scale = std::max(scale, std::abs(ref));
  }
  return scale > 0 ? worst / scale : worst;
}

struct CheckResult {
  double tolerance = kCheckTolerance;
  std::vector<std::pair<std::string, double>> errors;  // tensor name, max relative error
  bool passed() const {
    for (const auto& [name, error] : errors) {
      if (!(error <= tolerance)) return false;
    }
    return true;
  }
};

CheckResult Check(const Workload& w, const AttentionTensors<float>& in,
                  const AttentionTensors<float>& out) {
  // The reference sees exactly the float inputs the executor saw, in double.
  AttentionTensors<double> ref;
  ref.q = ToDouble(in.q);
  ref.k = ToDouble(in.k);
  ref.v = ToDouble(in.v);
  ref.o = TensorD(w.batch, w.seq_len, w.q_heads, w.head_dim);
  ref.lse = TensorD(w.batch, w.seq_len, w.q_heads, 1);
  exec::ReferenceForward(w, ref);
  CheckResult c;
  c.errors.push_back({"O", MaxRelativeError(out.o, ref.o)});
  c.errors.push_back({"LSE", MaxRelativeError(out.lse, ref.lse)});
  if (HasBackward(w.pass)) {
    ref.d_o = ToDouble(in.d_o);
    ref.dq = TensorD(w.batch, w.seq_len, w.q_heads, w.head_dim);
    ref.dk = TensorD(w.batch, w.seq_len, w.kv_heads, w.head_dim);
    ref.dv = TensorD(w.batch, w.seq_len, w.kv_heads, w.head_dim);
    exec::ReferenceBackward(w, ref);
    c.errors.push_back({"dQ", MaxRelativeError(out.dq, ref.dq)});
    c.errors.push_back({"dK", MaxRelativeError(out.dk, ref.dk)});
    c.errors.push_back({"dV", MaxRelativeError(out.dv, ref.dv)});
  }
  return c;
}

// Writes the outputs the pass produced into `dir` (created when missing). On failure removes the
// files this call wrote, so a failed run leaves no output files. Returns the file names.
Result<std::vector<std::string>> WriteOutputs(const std::string& dir, const Workload& w,
                                              const AttentionTensors<float>& out) {
  std::error_code error;
  fs::create_directories(dir, error);
  if (error)
    return Status::Io(dir + ": cannot create the output directory (" + error.message() + ")");
  struct File {
    const char* name;
    std::vector<int64_t> shape;
    const TensorF* tensor;
  };
  const std::vector<int64_t> q_shape = {w.batch, w.seq_len, w.q_heads, w.head_dim};
  const std::vector<int64_t> kv_shape = {w.batch, w.seq_len, w.kv_heads, w.head_dim};
  std::vector<File> files;
  if (HasForward(w.pass)) {
    files.push_back({"o.npy", q_shape, &out.o});
    files.push_back({"lse.npy", {w.batch, w.seq_len, w.q_heads}, &out.lse});
  }
  if (HasBackward(w.pass)) {
    files.push_back({"dq.npy", q_shape, &out.dq});
    files.push_back({"dk.npy", kv_shape, &out.dk});
    files.push_back({"dv.npy", kv_shape, &out.dv});
  }
  std::vector<std::string> written;
  for (const File& f : files) {
    const std::string path = (fs::path(dir) / f.name).string();
    if (Status st = exec::WriteNpyFloat32(path, f.shape, f.tensor->data); !st.ok()) {
      for (const std::string& name : written) fs::remove(fs::path(dir) / name, error);
      return st.code() == ErrorCode::kInvalidInput ? Status::Io(st.message()) : st;
    }
    written.push_back(f.name);
  }
  return written;
}

struct Report {
  const ExecuteFlags* flags = nullptr;
  const Prepared* prepared = nullptr;
  int ranks = 0;
  double wall_s = 0;
  Timeline measured;
  bool have_prediction = false;
  Timeline predicted;
  std::string prediction_error;  // why there is no prediction
  bool checked = false;
  CheckResult check;
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
  const Plan& plan = r.prepared->plan;
  const Topology& topology = r.prepared->topology;
  std::string out = "plan:      " + std::string(SchemeName(plan.params.scheme)) + " " +
                    plan.params.Describe() + " (" + r.flags->plan + ")\n";
  out += "workload:  " + plan.workload.Describe() +
         (r.prepared->widened ? " (the plan's pass is bwd)" : "") + "; " + r.prepared->precision + "\n";
  out += "run:       " + r.run + "\n";
  out += "inputs:    " + InputsDescription(*r.flags, plan.workload) + "\n\n";
  out += "measured:  " + FormatSeconds(r.wall_s) + " wall; last op ends at " +
         FormatSeconds(r.measured.run_s) + "\n";
  out += "per rank over " + std::to_string(r.ranks) + " ranks (measured):\n";
  const Timeline& m = r.measured;
  out += Columns(
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
    const Timeline& p = r.predicted;
    auto pct = [](double part, double whole) {
      return Fixed(Fraction(part, whole) * 100, 1) + "%";
    };
    out += Columns(
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
    out += Columns(rows, "  ");
    out += r.check.passed() ? "check passed\n" : "check FAILED\n";
  }
  if (!r.written.empty()) {
    out += "\noutputs:   ";
    for (size_t i = 0; i < r.written.size(); ++i) out += (i ? ", " : "") + r.written[i];
    out += " in " + r.flags->outputs + "\n";
  }
  return out;
}

void TimelineJson(JsonWriter& j, const Timeline& t) {
  j.BeginObject();
  j.Key("time_s");
  j.Number(t.run_s);
  for (const auto& [key, s] : {std::pair<const char*, const Spread*>{"compute_s", &t.compute},
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
  const Plan& plan = r.prepared->plan;
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
  j.Bool(r.prepared->widened);
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
  r.ranks = static_cast<int>(p.schedule.num_ranks);
  r.wall_s = wall_s;
  r.measured = MeasureTimeline(p.schedule, timings);
  sim::SimOptions options;
  options.record_op_times = false;
  auto sim = sim::SimulatePlan(p.plan, p.topology, options);
  if (sim.ok()) {
    r.have_prediction = true;
    r.predicted = PredictedTimeline(sim->result);
  } else {
    r.prediction_error = sim.status().message();
  }
  if (flags.check) {
    r.checked = true;
    r.check = Check(p.plan.workload, p.inputs, outputs);
    r.check.tolerance = p.tolerance;
  }
  const bool passed = !r.checked || r.check.passed();
  if (passed && !flags.outputs.empty()) {
    auto written = WriteOutputs(flags.outputs, p.plan.workload, outputs);
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
