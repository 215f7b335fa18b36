// Timing one candidate plan by replaying its schedule: what `meshplan plan --simulate K` plugs
// into the planner (planner::PlanTimer) and what a sweep's --simulate column holds.
#pragma once

#include <functional>
#include <utility>

#include "core/base/status.h"
#include "core/plan/plan.h"
#include "planner/context.h"
#include "planner/plan_timer.h"
#include "simulator/simulate.h"

namespace meshplan::sim {

// The plan `params` make on ctx's workload and topology, replayed by SimulatePlan (no op times
// kept; `options` gives the memory limit and progress). Returns the simulated seconds of one
// attention layer (fwd and/or bwd). Errors: SimulatePlan's, passed through (a replay past
// options.memory_limit_bytes is refused with kInvalidInput).
// REQUIRES: the plan is valid (its strategy's Evaluate says so).
Result<double> SimulatedSeconds(const planner::PlanContext& ctx, const SchemeParams& params,
                                const SimOptions& options = {});

// SimulatedSeconds behind the planner's PlanTimer interface.
class SimulationTimer : public planner::PlanTimer {
 public:
  // Called before each replay with the call's number, counting from 1 (e.g. to show progress).
  using BeforeReplay = std::function<void(int call)>;

  explicit SimulationTimer(BeforeReplay before_replay = {})
      : before_replay_(std::move(before_replay)) {}
  Result<double> Seconds(const planner::PlanContext& ctx, const SchemeParams& params) override;

 private:
  BeforeReplay before_replay_;
  int calls_ = 0;
};

}  // namespace meshplan::sim
