// The analytic verdict on one plan: validity, bytes, FLOPs, memory and time, and the helpers that
// add its time stages (the strategies' and the communication patterns' alike).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/plan/plan.h"
#include "core/plan/schedule.h"

namespace meshplan::planner {

// One overlapped (or not) stage of the time model, repeated `count` times:
// time = count * (overlapped ? max(compute_s, comm_s) : compute_s + comm_s).
struct TimeStage {
  std::string label;  // "ring step", "all-to-all Q,K,V", ...
  double compute_s = 0;
  double comm_s = 0;
  bool overlapped = true;
  int64_t count = 1;
  double Seconds() const {
    return static_cast<double>(count) *
           (overlapped ? std::max(compute_s, comm_s) : compute_s + comm_s);
  }
};

struct Estimate {
  SchemeParams params;
  bool valid = false;
  std::string reason;  // why not valid

  // Communication, bytes sent per rank for the whole pass (fwd, bwd or both).
  double bytes_per_rank = 0;        // max over ranks of all bytes sent
  std::vector<double> level_bytes;  // per network level: max over ranks of bytes sent there
  double fwd_bytes_per_rank = 0;    // forward part of bytes_per_rank
  double bwd_bytes_per_rank = 0;    // backward part

  // Compute (mask-aware, backward included when the pass has one).
  double flops_max = 0;   // busiest rank
  double flops_mean = 0;  // mean over ranks
  double imbalance() const { return flops_mean > 0 ? flops_max / flops_mean : 1.0; }

  // Memory: peak bytes per rank for this layer's attention (inputs, outputs, buffers, caches).
  double peak_memory_bytes = 0;
  bool fits = false;

  // Time (overlap-aware, from the stages).
  std::vector<TimeStage> stages;
  double time_s = 0;
  double compute_s = 0;       // busiest rank's compute
  double exposed_comm_s = 0;  // time_s - compute_s - framework_overhead_s - shared_device_lag_s
  // The framework's fixed time around the kernels (FrameworkOverheadSeconds), set by
  // EvaluatePlan and counted in time_s, not in the stages.
  double framework_overhead_s = 0;
  // The last rank's lag on an oversubscribed shared device (SharedDeviceEndLagSeconds), the same
  // way.
  double shared_device_lag_s = 0;

  // Replayed time (RerankBySimulation, planner/search.h); -1: not simulated.
  double simulated_s = -1;
  // With a model (--model): every attention layer of one training step under this plan, the
  // layers of each kind at that kind's time (TimeModelLayers, planner/model_layers.h); -1: none.
  double model_layers_s = -1;
  // With a model: the plan its sliding-window layers run when the framework runs them otherwise
  // than `params` (Megatron's per-layer --cp-comm-type, planner/plan_request.h); unset: params.
  std::optional<SchemeParams> window_params;
};

// Fills time_s, compute_s and exposed_comm_s from stages, framework_overhead_s and
// shared_device_lag_s.
void FinishTime(Estimate& estimate);

// "fwd" or "bwd", for time-stage labels.
inline const char* PhaseLabel(Phase phase) { return phase == Phase::kForward ? "fwd" : "bwd"; }
// Appends a stage of `comm_s` seconds of communication that no compute hides; nothing when
// comm_s is 0 (nothing moves).
void AddExposed(Estimate& e, const std::string& label, double comm_s);
// Appends a stage of `compute_s` seconds of compute that overlaps no communication.
void AddCompute(Estimate& e, const std::string& label, double compute_s);

}  // namespace meshplan::planner
