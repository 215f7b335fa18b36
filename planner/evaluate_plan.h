// A plan's estimate as every consumer sees it: the scheme's Evaluate plus what the model adds
// around every scheme alike (the framework's overhead per attention call, core/cost/kernel_time.h).
// The search, the expansion and the simulator's re-ranking all evaluate through here.
#pragma once

#include "core/plan/plan.h"
#include "planner/context.h"
#include "planner/estimate.h"
#include "planner/strategy.h"

namespace meshplan::planner {

Estimate EvaluatePlan(const PlanContext& ctx, const Strategy& strategy, const SchemeParams& params);

}  // namespace meshplan::planner
