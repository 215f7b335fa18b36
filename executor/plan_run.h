// A plan file's run, from plan to outputs: the library side of `meshplan execute`. The plan is
// expanded by planner::ExpandPlan (as for the simulator), inputs come from files or a seed, and a
// job with one process per rank agrees on its start, runs and gathers at rank 0.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/base/status.h"
#include "core/cluster/topology.h"
#include "core/plan/plan.h"
#include "core/plan/schedule.h"
#include "executor/execute.h"
#include "executor/gather.h"
#include "executor/io/input_source.h"
#include "executor/io/tensor.h"
#include "executor/timing/repeat.h"
#include "executor/transport/transport.h"

namespace meshplan::exec {

struct PlanInputs {
  std::string dir;    // q.npy, k.npy, v.npy, d_o.npy (executor/io/run_files.h); empty: random
  uint64_t seed = 1;  // of the random inputs
};

// The host memory a run may take (executor/host_memory.h), checked before its inputs exist.
struct HostBudget {
  double limit_bytes = 0;        // 0: not checked
  std::string limit_source;      // where the limit came from, for the refusal
  int64_t ranks_in_process = 1;  // ranks whose working memory this process holds
  bool check = false;            // --check will build the float64 reference
  bool keep_outputs = true;      // the run copies out the global outputs (ExecuteConfig)
};

// A run ready to go: everything a user can get wrong has been checked before it is built.
struct PlanRun {
  Plan plan;             // as run: the pass widened to fwd+bwd when the plan says bwd
  bool widened = false;  // the backward needs the forward's O and LSE
  Schedule schedule;
  // Where each rank reads its own input rows: the files' whole tensors, or values generated from
  // the seed (executor/io/input_source.h), so a rank builds only its shards.
  std::shared_ptr<const InputSource> inputs;
  InputType type = InputType::kFp32;    // the engine rounds the inputs to it
  double modelled_rank_peak_bytes = 0;  // the planner's peak memory per rank, in the plan's dtype
  double tolerance = 0;  // of CheckOutputs for that input type (executor/output_check.h)
};

// The whole inputs of a run as it sees them (rounded to its input type), for a check against the
// reference; the one place a seeded run holds every row.
AttentionTensors<float> CheckInputs(const PlanRun& run);

// Expands `plan` (read from `plan_path`, which errors about the plan name) on `topology` (the
// plan as written must be valid, then the one that runs), checks that the run fits `budget`, and
// prepares its inputs for `type`. Errors name the file or key (kInvalidInput, kNotFound); a run
// that does not fit is kInvalidInput with the need, the limit and a size that fits.
Result<PlanRun> PreparePlanRun(const Plan& plan, const std::string& plan_path,
                               const Topology& topology, const PlanInputs& inputs, InputType type,
                               const HostBudget& budget = {});

// Runs a prepared plan with every rank in this process (Execute on its schedule, workload and
// inputs).
Result<ExecutionResult> Execute(const PlanRun& run, const ExecuteConfig& config);

// `repeat` timed runs of a prepared plan (CheckRepeat), after WarmUpRuns(repeat) untimed ones,
// every rank in this process. The runs are deterministic in their outputs up to fp32 summation
// order; `first` is the first timed run (its outputs are the ones to check and write).
struct RepeatedExecution {
  ExecutionResult first;
  RepeatedRuns runs;
};
// `observer` (may be empty) is called after every run, the warm-up included. The first failing
// run ends the repetition with its error. The runs share config.session (one is made when it is
// null), so what the warm-up set up (cuDNN graphs) stays out of the timed runs.
Result<RepeatedExecution> ExecuteRepeated(const PlanRun& run, const ExecuteConfig& config,
                                          int repeat, const RunObserver& observer = {});

// What one rank of a job with one process per rank ends with.
struct JobRank {
  int failed_rank = -1;  // >= 0: that rank could not prepare; nothing ran
  Status failure;        // its reason (on that rank; elsewhere empty)
  int failure_code = 0;  // every rank learns the failing rank's code (start barrier)
  // Rank 0, after a successful job: the first timed run's outputs and timings.
  std::optional<GatheredRun> gathered;
  double wall_s = 0;   // the first timed run's on this rank
  RepeatedRuns runs;   // rank 0: every timed run (other ranks: wall_s only)
  std::string device;  // this rank's
};

// One rank of a job: a start barrier agrees that every rank prepared (`run`, or null with the
// reason `setup` and `code`, the exit code the caller wants for that failure); then this rank
// runs, and rank 0 gathers every rank's outputs and timings. With `repeat` > 1 every rank makes
// WarmUpRuns(repeat) untimed runs and then `repeat` timed ones (the same number on every rank),
// each behind its own start barrier, so that no run overlaps another across processes; rank 0
// gathers after every run and calls `observer` (may be empty) with its time. The runs share
// config.session, as in ExecuteRepeated. A failing run aborts
// the transport (the whole job ends) and is returned as an error; so is a failed gather.
Result<JobRank> RunJobRank(Transport& transport, const PlanRun* run, const Status& setup, int code,
                           const ExecuteConfig& config, std::chrono::milliseconds timeout,
                           int repeat = 1, const RunObserver& observer = {});

}  // namespace meshplan::exec
