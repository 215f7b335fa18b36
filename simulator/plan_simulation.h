// A plan file's recipe, checked against a topology, expanded and replayed: the glue between
// `meshplan simulate` (and the tests) and the simulator engine.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/cluster/topology.h"
#include "core/plan/plan.h"
#include "core/plan/schedule.h"
#include "planner/estimate.h"
#include "simulator/simulate.h"

namespace meshplan::sim {

struct PlanSimulation {
  // The plan's expanded per-rank program (what was replayed); without op times
  // (SimOptions::record_op_times false) only its scheme, rank count and layout: the replay freed
  // the ops, which nothing reads without times.
  Schedule schedule;
  planner::Estimate estimate;        // the planner's analytic verdict on the same plan and topology
  SimResult result;                  // the replay
  std::vector<int64_t> rank_to_gpu;  // rank r ran on GPU rank_to_gpu[r] (the plan's placement)
  // Wall-clock seconds spent in the replay alone (sim::Simulate or SimulateView; the timing view
  // is made during the expansion when SimulateView replays it).
  double replay_wall_s = 0;
  // Symmetry classes (SimOptions::use_symmetry): how many were replayed ("8 classes of 2048
  // ranks (q step 8 of 1024, kv step 1 of 16)") when used, else why not ("off: ...").
  std::string symmetry;
  bool symmetric = false;  // only representatives were replayed
};

// Checks `plan` against `topology`, evaluates it with its scheme's strategy, expands the schedule
// and replays it with ranks placed on GPUs by the plan's placement. Errors (one line):
//   - GPU-count mismatch: names both counts and the topology's source;
//   - a dtype the topology's GPU has no peak rate for (Topology::SupportsDType);
//   - parameters the strategy rejects: the strategy's reason;
//   - errors from expansion or from sim::Simulate, passed through.
// REQUIRES: plan came from ParsePlanToml/LoadPlanFile (validated workload) and topology is valid.
Result<PlanSimulation> SimulatePlan(const Plan& plan, const Topology& topology,
                                    const SimOptions& options = {});

}  // namespace meshplan::sim
