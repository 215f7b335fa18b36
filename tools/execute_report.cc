// The end of `meshplan execute`: the check against plain attention, the .npy outputs, and the
// report (report/runs/execution_report.h renders it).
#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "core/cost/attention_flops.h"
#include "executor/host_memory.h"
#include "executor/io/run_files.h"
#include "executor/output_check.h"
#include "executor/timing/foreign_load.h"
#include "executor/timing/repeat.h"
#include "report/runs/execution_report.h"
#include "report/runs/predicted_timeline.h"
#include "simulator/plan_simulation.h"
#include "tools/cli_common.h"
#include "tools/execute_run.h"

namespace meshplan::tools {

using exec::AttentionTensors;

namespace {

// What the report says of the run before any check: the plan, where it ran, the timed runs, the
// prediction beside them (or why there is none) and the memory figures.
report::ExecutionReport RunReport(const ExecuteFlags& flags, const Prepared& p,
                                  const exec::RepeatedRuns& runs, const std::string& run,
                                  const std::vector<int64_t>& rank_peak_bytes,
                                  const exec::SpeedCheck& speed) {
  report::ExecutionReport r;
  r.speed = speed;
  r.plan_file = flags.plan;
  r.plan = p.run.plan;
  r.widened = p.run.widened;
  r.topology = p.topology;
  r.precision = p.precision;
  r.backend = flags.backend;
  r.transport = flags.transport;
  r.run = run;
  r.inputs_dir = flags.inputs;
  r.seed = flags.seed;
  r.outputs_dir = flags.outputs;
  r.ranks = static_cast<int>(p.run.schedule.num_ranks);
  r.runs = runs;
  r.wall_s = runs.MedianWallS();
  r.measured = runs.MedianRun();
  sim::SimOptions options;
  options.record_op_times = true;  // for the per-op-class comparison
  auto sim = sim::SimulatePlan(p.run.plan, p.topology, options);
  if (sim.ok()) {
    r.have_prediction = true;
    r.predicted = report::PredictedTimeline(*sim);
  } else {
    r.prediction_error = sim.status().message();
  }
  r.flops = WorkloadFlops(p.run.plan.workload);
  r.process_peak_rss_bytes = exec::PeakResidentBytes();  // before the check builds its reference
  r.rank_peak_bytes = rank_peak_bytes;
  r.modelled_rank_peak_bytes =
      flags.backend == "cpu"
          ? exec::HostRankBytes(p.run.plan.workload, p.run.modelled_rank_peak_bytes)
          : p.run.modelled_rank_peak_bytes;
  // CPU ranks against a cluster that is not a calibration of this machine (its ranks would share
  // a device) run at another speed by design: no percentage errors unless --errors.
  r.compare_times = flags.errors || flags.backend != "cpu" || p.topology.gpu.ranks_per_device > 1;
  if (flags.backend == "cpu") {
    r.disturbance = exec::DisturbanceNote(
        runs.foreign_cores, runs.machine_cores, "the timed runs",
        "the times measured are theirs as much as the plan's, so they are no test of the model");
    if (!r.disturbance.empty() && !flags.errors) r.compare_times = false;
  }
  return r;
}

// The report in the format asked for, where -o says. Returns the exit code.
int EmitExecutionReport(const ExecuteFlags& flags, const report::ExecutionReport& r) {
  if (flags.format == "csv") {
    return EmitCsvReport(flags.out, report::ExecutionCsv(r, /*with_header=*/true), flags.append,
                         flags.quiet);
  }
  return EmitReport(
      flags.out,
      flags.format == "json" ? report::RenderExecutionJson(r) : report::RenderExecutionTable(r),
      flags.quiet);
}

}  // namespace

// After successful runs (on rank 0 for MPI): check and write the first timed run's outputs, print
// the report of every timed run. Returns the exit code.
int FinishExecution(const ExecuteFlags& flags, const Prepared& p,
                    const AttentionTensors<float>& outputs, const exec::RepeatedRuns& runs,
                    const std::string& run, StaleOutputs& stale,
                    const std::vector<int64_t>& rank_peak_bytes, const exec::SpeedCheck& speed) {
  if (runs.timelines.empty()) return ReportError(Status::Internal("execute: no timed run"));
  report::ExecutionReport r = RunReport(flags, p, runs, run, rank_peak_bytes, speed);
  if (flags.check) {
    r.checked = true;
    r.check =
        exec::CheckOutputs(p.run.plan.workload, exec::CheckInputs(p.run), outputs, p.run.tolerance);
  }
  const bool passed = !r.checked || r.check.passed();
  if (passed && !flags.outputs.empty()) {
    auto written = exec::WriteOutputFiles(flags.outputs, p.run.plan.workload, outputs);
    if (!written.ok()) return ReportError(Status::Io(written.status().message() + stale.Suffix()));
    r.written = std::move(written).value();
  }
  const int written_report = EmitExecutionReport(flags, r);
  if (!passed) {
    std::fprintf(stderr, "meshplan: error: check failed: %s%s%s\n",
                 report::DescribeCheckFailure(r.check).c_str(),
                 flags.outputs.empty() ? "" : "; no outputs written", stale.Suffix().c_str());
    return kExitFailure;
  }
  return written_report;
}

exec::SpeedCheck SpeedCheckOf(const ExecuteFlags& flags, const Prepared& p) {
  if (flags.backend != "cpu" || flags.transport != "threads") return {};
  return exec::SpeedCheckFor(p.topology.calibration);
}

void TimeReferenceBlock(const exec::SpeedCheck& speed, bool quiet, double* seconds) {
  *seconds = 0;
  if (!(speed.calibration_s > 0)) return;
  auto measured = exec::CpuReferenceBlockSeconds(speed.head_dim);
  if (measured.ok()) {
    *seconds = *measured;
  } else if (!quiet) {
    std::fprintf(stderr, "meshplan: note: the machine's speed was not checked: %s\n",
                 measured.status().message().c_str());
  }
}

void StaleOutputs::Remove() {
  if (dir_.empty()) return;
  for (const std::string& name : exec::RemoveStaleOutputFiles(dir_)) {
    if (std::find(removed_.begin(), removed_.end(), name) == removed_.end())
      removed_.push_back(name);
  }
}

std::string StaleOutputs::Suffix() {
  Remove();
  if (removed_.empty()) return "";
  // In the order a run writes them (exec::OutputFileNames), whenever each was removed.
  std::string names;
  for (const std::string& name : exec::OutputFileNames()) {
    if (std::find(removed_.begin(), removed_.end(), name) != removed_.end())
      names += (names.empty() ? "" : ", ") + name;
  }
  return "; removed " + names + " of an earlier run from " + dir_;
}

}  // namespace meshplan::tools
