// `meshplan execute PLAN --backend cpu`: run a plan's schedule for real on the CPU, one rank per
// thread (--transport threads) or one rank per MPI process (--transport mpi, under mpirun);
// optionally check the result against plain attention in double precision, write the outputs as
// .npy files, and report the measured timeline next to the simulator's prediction.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/json_writer.h"
#include "core/plan_io.h"
#include "core/topology_toml.h"
#include "core/units.h"
#include "executor/execute.h"
#include "executor/gather.h"
#include "executor/npy.h"
#include "executor/reference.h"
#include "planner/context.h"
#include "planner/strategy.h"
#include "simulator/plan_simulation.h"
#include "tools/cli_common.h"
#include "tools/text_format.h"
#include "tools/commands.h"
#if MESHPLAN_HAVE_MPI
#include "executor/mpi_transport.h"
#endif

namespace meshplan::tools {
namespace {

namespace fs = std::filesystem;
using exec::AttentionTensors;
using exec::OpTiming;
using exec::TensorD;
using exec::TensorF;

// --check fails when any output's max relative error exceeds this.
constexpr double kCheckTolerance = 1e-4;

struct ExecuteFlags {
  std::string plan;
  std::string topology;
  std::string backend = "cpu";
  std::string transport = "threads";
  bool check = false;
  uint64_t seed = 1;
  std::string inputs;
  std::string outputs;
  double timeout_s = 30;
  std::string format = "table";
  std::string inject_fail;  // "RANK:OP"
  int inject_silent = -1;
};

// ---- preparation: everything a user can get wrong, before anything runs ---------------------

struct Prepared {
  Plan plan;  // as run: the pass widened to fwd+bwd when the file says bwd
  Topology topology;
  bool widened = false;
  Schedule schedule;
  AttentionTensors<float> inputs;
  exec::RunOptions options;
};

Status CheckFlags(const ExecuteFlags& flags) {
  if (flags.backend != "cpu") {
    return Status::Invalid("--backend: backend '" + flags.backend +
                           "' is not built in this binary (available: cpu)");
  }
  if (flags.transport != "threads" && flags.transport != "mpi") {
    return Status::Invalid("--transport: '" + flags.transport + "' is not one of threads, mpi");
  }
  if (!(flags.timeout_s > 0) || !std::isfinite(flags.timeout_s) || flags.timeout_s > 1e6) {
    return Status::Invalid("--timeout-s: must be a number of seconds in (0, 1e6]");
  }
  return CheckFormat(flags.format, {"table", "json"});
}

std::chrono::milliseconds Timeout(const ExecuteFlags& flags) {
  return std::chrono::milliseconds(static_cast<int64_t>(std::ceil(flags.timeout_s * 1000)));
}

// RunOptions with --timeout-s and the fault injection flags; ranks checked against `ranks`.
Result<exec::RunOptions> MakeRunOptions(const ExecuteFlags& flags, int64_t ranks) {
  exec::RunOptions options;
  options.recv_timeout = Timeout(flags);
  if (!flags.inject_fail.empty()) {
    const size_t colon = flags.inject_fail.find(':');
    int64_t rank = -1, op = -1;
    if (colon != std::string::npos) {
      try {
        size_t used_rank = 0, used_op = 0;
        const std::string rank_text = flags.inject_fail.substr(0, colon),
                          op_text = flags.inject_fail.substr(colon + 1);
        rank = std::stoll(rank_text, &used_rank);
        op = std::stoll(op_text, &used_op);
        if (used_rank != rank_text.size() || used_op != op_text.size()) rank = -1;
      } catch (const std::exception&) {
        rank = -1;
      }
    }
    if (rank < 0 || rank >= ranks || op < 0) {
      return Status::Invalid("--inject-fail: '" + flags.inject_fail +
                             "' is not RANK:OP with 0 <= RANK < " + std::to_string(ranks) +
                             " and OP >= 0");
    }
    options.fail_rank = static_cast<int>(rank);
    options.fail_op = op;
  }
  if (flags.inject_silent != -1) {
    if (flags.inject_silent < 0 || flags.inject_silent >= ranks) {
      return Status::Invalid("--inject-silent: rank " + std::to_string(flags.inject_silent) +
                             " is not in [0, " + std::to_string(ranks) + ")");
    }
    options.silent_rank = flags.inject_silent;
  }
  return options;
}

// Checks the plan against the topology with its strategy and expands the schedule.
Result<Schedule> ExpandPlan(const Plan& plan, const Topology& topology, bool widened) {
  const std::string scheme(SchemeName(plan.params.scheme));
  if (plan.num_gpus != topology.num_gpus()) {
    return Status::Invalid("plan for " + std::to_string(plan.num_gpus) + " GPUs (made for '" +
                           plan.topology_name + "') does not match topology '" + topology.name +
                           "' (" + topology.source + ") with " +
                           std::to_string(topology.num_gpus()) + " GPUs");
  }
  const std::unique_ptr<planner::Strategy> strategy = planner::MakeStrategy(plan.params.scheme);
  if (strategy == nullptr) return Status::Internal("no strategy for scheme '" + scheme + "'");
  const planner::PlanContext ctx(plan.workload, topology);
  const planner::Estimate estimate = strategy->Evaluate(ctx, plan.params);
  if (!estimate.valid) {
    return Status::Invalid("plan " + scheme + " " + plan.params.Describe() +
                           " is not valid on topology '" + topology.name + "'" +
                           (widened ? " with pass fwd+bwd" : "") + ": " + estimate.reason);
  }
  MESHPLAN_RETURN_IF_ERROR(ValidatePlacement(plan.params.RankDims(), plan.params.placement)
                               .WithContext("scheme.placement"));
  return strategy->Expand(ctx, plan.params);
}

TensorF FromNpy(const exec::NpyArray& array) {
  TensorF t(array.shape[0], array.shape[1], array.shape[2], array.shape[3]);
  for (size_t i = 0; i < array.values.size(); ++i) t.data[i] = static_cast<float>(array.values[i]);
  return t;
}

TensorF ToFloat(const TensorD& t) {
  TensorF f(t.batch, t.tokens, t.heads, t.dim);
  for (size_t i = 0; i < t.data.size(); ++i) f.data[i] = static_cast<float>(t.data[i]);
  return f;
}

TensorD ToDouble(const TensorF& t) {
  TensorD d(t.batch, t.tokens, t.heads, t.dim);
  for (size_t i = 0; i < t.data.size(); ++i) d.data[i] = t.data[i];
  return d;
}

Result<AttentionTensors<float>> LoadInputs(const std::string& dir, const Workload& w) {
  AttentionTensors<float> in;
  const std::vector<int64_t> q_shape = {w.batch, w.seq_len, w.q_heads, w.head_dim};
  const std::vector<int64_t> kv_shape = {w.batch, w.seq_len, w.kv_heads, w.head_dim};
  struct File {
    const char* name;
    const std::vector<int64_t>* shape;
    TensorF* tensor;
  };
  std::vector<File> files = {
      {"q.npy", &q_shape, &in.q}, {"k.npy", &kv_shape, &in.k}, {"v.npy", &kv_shape, &in.v}};
  if (HasBackward(w.pass)) files.push_back({"d_o.npy", &q_shape, &in.d_o});
  for (const File& f : files) {
    auto array = exec::ReadNpyWithShape((fs::path(dir) / f.name).string(), *f.shape);
    if (!array.ok()) {
      // Every problem with an input file is the user's to fix (exit 2), I/O errors included.
      return array.status().code() == ErrorCode::kNotFound
                 ? array.status()
                 : Status::Invalid(array.status().message());
    }
    *f.tensor = FromNpy(*array);
  }
  return in;
}

Result<Prepared> Prepare(const ExecuteFlags& flags) {
  MESHPLAN_RETURN_IF_ERROR(CheckFlags(flags));
  Prepared p;
  auto plan = LoadPlanFile(flags.plan);
  if (!plan.ok()) return plan.status();
  p.plan = std::move(plan).value();
  auto topology = PlanTopology(flags.plan, flags.topology, p.plan);
  if (!topology.ok()) return topology.status();
  p.topology = std::move(topology).value();
  {
    // The plan as written must be valid; then the one that runs.
    auto as_written = ExpandPlan(p.plan, p.topology, false);
    if (!as_written.ok()) return as_written.status().WithContext(flags.plan);
    if (p.plan.workload.pass == Pass::kBackward) {
      p.widened = true;
      p.plan.workload.pass = Pass::kForwardBackward;
    } else {
      p.schedule = std::move(as_written).value();
    }
  }
  if (p.widened) {
    auto schedule = ExpandPlan(p.plan, p.topology, true);
    if (!schedule.ok()) return schedule.status().WithContext(flags.plan);
    p.schedule = std::move(schedule).value();
  }
  auto options = MakeRunOptions(flags, p.schedule.num_ranks);
  if (!options.ok()) return options.status();
  p.options = *options;
  const Workload& w = p.plan.workload;
  if (!flags.inputs.empty()) {
    auto in = LoadInputs(flags.inputs, w);
    if (!in.ok()) return in.status();
    p.inputs = std::move(in).value();
  } else {
    const AttentionTensors<double> random = exec::RandomInputs(w, flags.seed);
    p.inputs.q = ToFloat(random.q);
    p.inputs.k = ToFloat(random.k);
    p.inputs.v = ToFloat(random.v);
    if (HasBackward(w.pass)) p.inputs.d_o = ToFloat(random.d_o);
  }
  return p;
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
  std::vector<std::pair<std::string, double>> errors;  // tensor name, max relative error
  bool passed() const {
    for (const auto& [name, error] : errors) {
      if (!(error <= kCheckTolerance)) return false;
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
         (r.prepared->widened ? " (the plan's pass is bwd)" : "") + "; computed in fp32\n";
  out += "run:       backend cpu, transport " + r.flags->transport + ", " +
         std::to_string(r.ranks) + " ranks (" +
         (r.flags->transport == "mpi" ? "one process per rank" : "one thread per rank and stream") +
         ")\n";
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
    out +=
        "  (the CPU executor's speed is not the cluster's: compare the schedule's shape, the "
        "ratios, not the times)\n";
  } else {
    out += "  unavailable: " + r.prediction_error + "\n";
  }
  if (r.checked) {
    out +=
        "\ncheck: max relative error (max |x - ref| / max |ref|) against float64 attention, "
        "tolerance " +
        Scientific(kCheckTolerance) + ":\n";
    std::vector<std::vector<std::string>> rows;
    for (const auto& [name, error] : r.check.errors) {
      rows.push_back(
          {name, Scientific(error), error <= kCheckTolerance ? "ok" : "EXCEEDS TOLERANCE"});
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
    j.Number(kCheckTolerance);
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

void NoteWidenedPass(const Prepared& p) {
  if (p.widened) {
    std::fprintf(stderr,
                 "meshplan: note: the plan's pass is bwd; running fwd+bwd (the backward needs the "
                 "forward's O and "
                 "LSE)\n");
  }
}

// After a successful run (on rank 0 for MPI): check, write outputs, print. Returns the exit code.
int Finish(const ExecuteFlags& flags, const Prepared& p, const AttentionTensors<float>& outputs,
           const std::vector<std::vector<OpTiming>>& timings, double wall_s) {
  Report r;
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
      if (!(error <= kCheckTolerance))
        worst += (worst.empty() ? "" : ", ") + name + " " + Scientific(error);
    }
    std::fprintf(stderr, "meshplan: error: check failed: max relative error above %s: %s%s\n",
                 Scientific(kCheckTolerance).c_str(), worst.c_str(),
                 flags.outputs.empty() ? "" : "; no outputs written");
    return kExitFailure;
  }
  return kExitOk;
}

int RunOnThreads(const ExecuteFlags& flags) {
  auto prepared = Prepare(flags);
  if (!prepared.ok()) return ReportError(prepared.status());
  const Prepared& p = *prepared;
  NoteWidenedPass(p);
  auto run = exec::ExecuteOnThreads(p.schedule, p.plan.workload, p.inputs, p.options);
  if (!run.ok()) {
    std::fprintf(stderr, "meshplan: error: run failed: %s\n", run.status().message().c_str());
    return kExitFailure;
  }
  return Finish(flags, p, run->outputs, run->timings, run->wall_s);
}

#if MESHPLAN_HAVE_MPI
int ExitCodeOf(const Status& status) {
  return status.code() == ErrorCode::kInvalidInput || status.code() == ErrorCode::kNotFound
             ? kExitInvalidInput
             : kExitFailure;
}

// One process per rank. Every rank prepares (plan, schedule, inputs) itself; a start barrier
// agrees that all are ready (else the first failing rank, rank 0 first, prints its error and
// every rank exits with its code); each runs its rank; rank 0 gathers, checks and prints.
int RunMpi(const ExecuteFlags& flags, exec::MpiTransport& transport) {
  const int rank = transport.rank();
  const exec::Clock::time_point setup_deadline =
      exec::Clock::now() + Timeout(flags) + std::chrono::seconds(30);
  auto prepared = Prepare(flags);
  Status setup = prepared.ok() ? Status::Ok() : prepared.status();
  if (setup.ok() && prepared->schedule.num_ranks != transport.size()) {
    setup = Status::Invalid(
        "--transport mpi: the plan has " + std::to_string(prepared->schedule.num_ranks) +
        " ranks but this MPI job has " + std::to_string(transport.size()) +
        (transport.size() == 1 ? " process" : " processes") + "; run it as mpirun -np " +
        std::to_string(prepared->schedule.num_ranks) + " meshplan execute ...");
  }
  auto codes = exec::ExchangeCodes(transport, setup.ok() ? 0 : ExitCodeOf(setup), setup_deadline);
  if (!codes.ok())
    transport.Abort("rank " + std::to_string(rank) + ": start: " + codes.status().message());
  int reporter = -1;
  for (int r = 0; r < static_cast<int>(codes->size()); ++r) {
    if ((*codes)[r] != 0) {
      reporter = r;
      break;
    }
  }
  if (reporter >= 0) {
    if (rank == reporter) {
      std::fprintf(stderr, "meshplan: error: %s%s\n",
                   rank == 0 ? "" : ("rank " + std::to_string(rank) + ": ").c_str(),
                   setup.message().c_str());
    }
    return (*codes)[reporter];
  }
  const Prepared& p = *prepared;
  if (rank == 0) NoteWidenedPass(p);

  AttentionTensors<float> outputs = exec::OutputTensors(p.plan.workload);
  std::vector<uint8_t> covered(exec::CoverageSize(p.plan.workload), 0);
  std::vector<OpTiming> timings;
  const exec::Clock::time_point start = exec::Clock::now();
  // A failing rank aborts the whole job from inside the runner; this is the backstop.
  if (Status st = exec::ExecuteRank(p.schedule, p.plan.workload, p.inputs, transport, p.options,
                                    &outputs, &covered, &timings);
      !st.ok()) {
    transport.Abort(st.message());
  }
  auto gathered = exec::GatherOutputs(transport, p.plan.workload, outputs, covered, timings,
                                      exec::Clock::now() + Timeout(flags));
  if (!gathered.ok()) {
    // A message that never came: the job may hang elsewhere, so end it. A gathered result that
    // is incomplete (no rank produced some element) is rank 0's to report.
    if (gathered.status().code() == ErrorCode::kIo || rank != 0) {
      transport.Abort("rank " + std::to_string(rank) + ": gather: " + gathered.status().message());
    }
    std::fprintf(stderr, "meshplan: error: run failed: %s\n", gathered.status().message().c_str());
    return kExitFailure;
  }
  const double wall_s = std::chrono::duration<double>(exec::Clock::now() - start).count();
  if (rank != 0) {
    if (Status st = transport.Flush(exec::Clock::now() + Timeout(flags)); !st.ok()) {
      transport.Abort("rank " + std::to_string(rank) + ": gather: " + st.message());
    }
    return kExitOk;
  }
  return Finish(flags, p, gathered->outputs, gathered->timings, wall_s);
}
#endif  // MESHPLAN_HAVE_MPI

int RunExecute(const ExecuteFlags& flags) {
  if (flags.transport != "mpi") return RunOnThreads(flags);
#if MESHPLAN_HAVE_MPI
  // Flags first, so a bad flag needs no MPI; then MPI is initialised only for --transport mpi.
  if (Status st = CheckFlags(flags); !st.ok()) return ReportError(st);
  auto session = exec::MpiSession::Init(nullptr, nullptr);
  if (!session.ok()) return ReportError(session.status().WithContext("--transport mpi"));
  int code;
  {
    exec::MpiTransport transport(**session);
    code = RunMpi(flags, transport);
  }  // the transport drains its sends before the session finalizes MPI
  return code;
#else
  return ReportError(
      Status::Invalid("--transport mpi: this binary was built without MPI (install libopenmpi-dev "
                      "and openmpi-bin, then rebuild)"));
#endif
}

}  // namespace

Runner RegisterExecuteCommand(CLI::App& app) {
  auto flags = std::make_shared<ExecuteFlags>();
  CLI::App* cmd = app.add_subcommand("execute",
                                     "Run a plan file for real (CPU: one rank per thread or MPI "
                                     "process), check it against plain attention, "
                                     "and compare the measured timeline with the simulator's");
  cmd->add_option("plan", flags->plan, "Plan file (TOML, from meshplan plan --out)")->required();
  cmd->add_option("--backend", flags->backend, "Compute backend: cpu (the only one built)")
      ->capture_default_str();
  cmd->add_option(
         "--transport", flags->transport,
         "threads (one process) or mpi (one process per rank: mpirun -np P meshplan execute ...)")
      ->capture_default_str();
  cmd->add_flag("--check", flags->check,
                "Compare O, LSE, dQ, dK, dV with plain attention in float64; fails (exit 1) when a "
                "max relative "
                "error (max |x - ref| / max |ref|) exceeds 1e-4");
  cmd->add_option("--seed", flags->seed, "Seed of the random inputs (when no --inputs)")
      ->capture_default_str();
  cmd->add_option(
      "--inputs", flags->inputs,
      "Directory with q.npy, k.npy, v.npy ([B,S,Hq,d], [B,S,Hkv,d]) and d_o.npy for a backward");
  cmd->add_option("--outputs", flags->outputs,
                  "Directory (created if missing) for o.npy, lse.npy ([B,S,Hq]), dq.npy, dk.npy, "
                  "dv.npy; written "
                  "only after a successful run (and check)");
  cmd->add_option("--topology,-t", flags->topology,
                  "Cluster TOML file for the prediction (default: the plan's own topology)");
  cmd->add_option("--timeout-s", flags->timeout_s,
                  "A receive waiting longer than this fails the run (seconds)")
      ->capture_default_str();
  cmd->add_option("--format", flags->format, "Output: table or json")->capture_default_str();
  cmd->add_option("--inject-fail", flags->inject_fail,
                  "Testing: rank RANK fails at its op OP (RANK:OP), as if that op had failed");
  cmd->add_option(
      "--inject-silent", flags->inject_silent,
      "Testing: this rank drops every message it sends, like a peer that never answers");
  return [flags] { return RunExecute(*flags); };
}

}  // namespace meshplan::tools
