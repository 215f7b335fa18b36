// Timing plans by something better than the closed forms (e.g. the simulator), plugged in by
// tools/ so that the planner library never depends on the simulator.
#pragma once

#include "core/base/status.h"
#include "core/plan/plan.h"
#include "planner/context.h"

namespace meshplan::planner {

class PlanTimer {
 public:
  virtual ~PlanTimer() = default;
  // End-to-end seconds of the plan `params` on ctx's workload and topology.
  // REQUIRES: the plan is valid (its strategy's Evaluate says so).
  virtual Result<double> Seconds(const PlanContext& ctx, const SchemeParams& params) = 0;
};

}  // namespace meshplan::planner
