// Capacity planning: sweeps of the planner (and optionally the simulator) over clusters of
// several sizes, sequence lengths and schemes. report/capacity/sweep_table.h renders the rows.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/cluster/topology.h"
#include "core/plan/plan.h"
#include "core/workload/model_config.h"
#include "core/workload/workload.h"
#include "planner/plan_request.h"

namespace meshplan::capacity {

struct SweepSpec {
  std::vector<Topology> topologies;  // at least one
  std::vector<int64_t> gpus;         // empty: each topology's own size
  // Tensor-parallel degrees (empty: 1): each point plans one CP group beside TP on `gpus` GPUs
  // (ContextParallelCluster, DivideHeads).
  std::vector<int64_t> tps;
  int64_t dp = 1;                       // data-parallel replicas beside TP and CP
  std::optional<ModelConfig> model;     // rows then carry the time of all the model's layers
  std::vector<int64_t> seq_lens;        // at least one
  std::vector<Scheme> schemes;          // empty: every scheme
  Workload base;                        // everything but seq_len
  bool partial_dtype_given = false;     // base.partial_dtype was asked for (planner::PlanRequest)
  bool attention_kernel_given = false;  // the topologies' kernel was chosen (planner::PlanRequest)
  planner::Framework framework = planner::Framework::kAny;             // rows: the plans it runs
  planner::SeqRounding seq_rounding = planner::SeqRounding::kAsGiven;  // each point's length
  double reserved_memory_bytes = 0;
  bool simulate = false;  // also replay each point's best plan per scheme
  // With `simulate`: the host memory each replay may use (sim::SimOptions::memory_limit_bytes;
  // 0: no limit); a point past it ends the sweep with one line naming the point.
  double replay_memory_limit_bytes = 0;
  std::string replay_memory_limit_source;
};

// A sweep plans at most this many points (topology x GPU count x sequence length): each list
// holds at most kMaxListValues values, but their product could otherwise run for days.
inline constexpr int64_t kMaxSweepPoints = 1'000'000;

// One point x scheme: the best plan of that scheme (fits first, then time), or why none.
struct SweepRow {
  std::string topology;
  int64_t gpus = 0;
  int64_t seq_len = 0;  // as planned (--seq-round may have rounded the point's length)
  Scheme scheme;
  bool valid = false;
  std::string reason;   // when !valid
  SchemeParams params;  // when valid
  double time_s = 0;    // planner estimate
  double compute_s = 0;
  double exposed_comm_s = 0;
  double comm_share = 0;  // exposed_comm_s / time_s
  double bytes_per_gpu = 0;
  double peak_memory_bytes = 0;
  bool fits = false;
  double simulated_s = -1;   // when simulated
  int64_t tp = 1;            // tensor-parallel degree beside the plan (gpus counts all GPUs)
  double all_layers_s = -1;  // with a model: all its attention layers of one training step
};

// Called after each point (topology x gpus x seq) with (done, total).
using Progress = std::function<void(int64_t, int64_t)>;
// Asked before each point: true stops the sweep there, with the rows of the points done.
using StopRequested = std::function<bool()>;

// The planning request of one point: `cluster` (a topology scaled to the point's GPU count) with
// TP degree `tp`, the spec's workload at `seq_len`, and every other choice from the spec.
planner::PlanRequest SweepPointRequest(const SweepSpec& spec, const Topology& cluster, int64_t tp,
                                       int64_t seq_len);

// Rows in order topology, gpus, seq_len, scheme. Errors: empty lists, a GPU count a topology
// cannot be scaled to, an invalid workload (named by the point), a model the mask cannot take. A
// point the request cannot be answered at (degrees the cluster or heads cannot take) is a row per
// scheme with the reason.
// `stop`, when given and true before a point, ends the sweep with the rows of the points before.
Result<std::vector<SweepRow>> RunSweep(const SweepSpec& spec, const Progress& progress = {},
                                       const StopRequested& stop = {});

}  // namespace meshplan::capacity
