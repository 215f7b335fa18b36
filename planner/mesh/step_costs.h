// What one Mesh-Attention step costs on a given cluster: message sizes (docs/schemes.md, mesh
// row), block and transfer times. The analytic estimate and the schedule expansion both take
// the greedy's StepCosts from here, so they follow the same step table.
#pragma once

#include "core/plan/plan.h"
#include "core/plan/schedule.h"
#include "planner/context.h"
#include "planner/mesh/greedy.h"

namespace meshplan::planner::mesh {

// Bytes of one message of each kind for a phase. Forward: Q shift |Q|, KV shift |KV|, partial
// O+LSE. Backward: Q-dimension shift Q+dO+LSE+D (dO+LSE+D with cache), KV shift |KV| (none
// with cache: 0), partial dQ and partial dK+dV.
struct MessageBytes {
  double q_shift = 0;
  double kv_shift = 0;
  double q_partial = 0;
  double kv_partial = 0;
};
MessageBytes PhaseMessageBytes(const ShardBytes& shard, Phase phase, bool cache);

// Seconds of one block and of one message of each kind on the plan's placement, and whether the
// Q-dimension and KV-dimension rings share their slowest link (then their times add up).
struct StepTimes {
  double block = 0;
  double q_shift = 0, kv_shift = 0, q_partial = 0, kv_partial = 0;
  bool shared_link = false;
  // The greedy's relative costs (tiny positive floors keep ratios defined).
  StepCosts Costs() const;
};
// REQUIRES: params is a valid plan of the Mesh tile family (a tile, or a tile after a
// head-parallel dimension) for ctx, and `placement` its rank grid on the GPUs
// (Placement(RankDims(params), params.placement)).
StepTimes PhaseStepTimes(const PlanContext& ctx, const SchemeParams& params,
                         const Placement& placement, Phase phase);

// Rank-grid dimensions of the Q and KV rings (the last two of the plan's rank grid, as `placement`
// holds it: 0 and 1, or 1 and 2 after a head-parallel dimension).
int QDim(const Placement& placement);
int KvDim(const Placement& placement);

}  // namespace meshplan::planner::mesh
