// The report of `meshplan execute`: what ran, the measured timeline next to the simulator's
// prediction for the plan's cluster (total, per rank and per op class, each with its signed error:
// report/runs/timeline_comparison.h), the check against plain attention, and the output files; as a
// table or JSON.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/cluster/topology.h"
#include "core/plan/plan.h"
#include "executor/calibration/speed_check.h"
#include "executor/output_check.h"
#include "executor/timing/repeat.h"
#include "executor/timing/timeline.h"

namespace meshplan::report {

struct ExecutionReport {
  std::string plan_file;
  Plan plan;              // as run
  bool widened = false;   // the plan's pass was bwd, run as fwd+bwd
  Topology topology;      // the prediction's cluster
  std::string precision;  // how the run treated numbers
  std::string backend, transport;
  std::string run;         // what ran where ("backend cpu, transport threads, 4 ranks (...)")
  std::string inputs_dir;  // empty: random inputs from `seed`
  uint64_t seed = 1;
  int ranks = 0;
  // The timed runs (`meshplan execute --repeat N`): their times and median, min, max and spread.
  // wall_s and measured describe the median run (RepeatStats::median_run); with no runs recorded
  // the report is of one run.
  exec::RepeatedRuns runs;
  double wall_s = 0;
  exec::RunTimeline measured;
  bool have_prediction = false;
  exec::RunTimeline predicted;  // report::PredictedTimeline (report/runs/predicted_timeline.h)
  // Whether the measured times can be held against the predicted ones: false for CPU ranks
  // against a cluster that is not a calibration of this machine, where they differ by factors of
  // thousands by design. Then the table shows both side by side, says so in one line and gives no
  // percentage errors (the shares of compute and communication are the comparison); JSON keeps
  // its errors and says `"times_comparable": false`.
  bool compare_times = true;
  // Other processes' use of the machine during the timed runs (RepeatedRuns::foreign_cores), and
  // when it passed exec::kDisturbingForeignCores the one line that says so (exec::DisturbanceNote);
  // then compare_times is false unless --errors asks for the errors.
  std::string disturbance;
  std::string prediction_error;  // why there is no prediction
  // The machine's speed before and after the timed runs against its calibration's (CPU ranks on
  // a calibrated cluster with a reference block); where measured, the table adds the prediction
  // scaled by SpeedCheck::Ratio and its error, and JSON and CSV carry both.
  exec::SpeedCheck speed;
  // Throughput and memory, the benchmark's figures: the run's FLOPs by LongCA's count
  // (core/cost/attention_flops.h), over the ranks and the measured (median) time, is TFLOP/s per
  // rank; the process's peak resident set before any check, and per rank the most memory its engine
  // held (first timed run; empty when not known here, e.g. the other processes of an MPI job), next
  // to the planner's per-rank model as this backend holds it (fp32 on the CPU).
  double flops = 0;
  double process_peak_rss_bytes = 0;
  std::vector<int64_t> rank_peak_bytes;
  double modelled_rank_peak_bytes = 0;
  bool checked = false;
  exec::OutputCheck check;  // of the first timed run's outputs (so are the written files)
  std::string outputs_dir;
  std::vector<std::string> written;  // output files (names in outputs_dir)
};

// TFLOP/s per rank of the measured (median) time; 0 without a time.
double TflopsPerRank(const ExecutionReport& r);

std::string RenderExecutionTable(const ExecutionReport& r);
std::string RenderExecutionJson(const ExecutionReport& r);
// The run as one CSV row, after a header line unless `with_header` is false (to append to a file
// that has one): what ran, the measured times (median, min, max over the timed runs, and the
// median run's means), the prediction and its error, throughput, memory and the check. Numbers
// at full precision, bytes as integers; the same columns whatever the plan or cluster (empty
// fields where a value is absent), so runs append into one file.
std::string ExecutionCsv(const ExecutionReport& r, bool with_header);

// "1.23e-04"
std::string Scientific(double value);
// "max relative error above TOL: dQ 3.1e-02, dK ..." (the tensors above the tolerance).
std::string DescribeCheckFailure(const exec::OutputCheck& check);

}  // namespace meshplan::report
