// The plan search: every scheme x parameters x placement x cache choice, ranked by estimated time.
#pragma once

#include <vector>

#include "core/plan/plan.h"
#include "planner/context.h"
#include "planner/estimate.h"
#include "planner/plan_timer.h"

namespace meshplan::planner {

struct SearchOptions {
  std::vector<Scheme> schemes;  // empty: every scheme
};

struct SearchResult {
  // Valid plans: those that fit in memory first, each group by ascending time (ties: fewer bytes).
  std::vector<Estimate> ranked;
  // Schemes with no valid plan, one entry each with the reason (e.g. Ulysses on too few heads).
  std::vector<Estimate> rejected;
  int64_t evaluated = 0;  // candidates evaluated
};

SearchResult Search(const PlanContext& ctx, const SearchOptions& options);

// Times the first min(k, ranked.size()) plans of result->ranked with `timer`, stores each time in
// Estimate::simulated_s and re-sorts those plans (fitting plans first, then by simulated time;
// ties keep their estimated order); the plans after them keep their places. k <= 0 does nothing.
// An error from the timer is returned with the plan named, and result is left unchanged.
Status RerankBySimulation(const PlanContext& ctx, PlanTimer& timer, int k, SearchResult* result);

// The plan file contents for an estimate.
Plan MakePlan(const PlanContext& ctx, const SchemeParams& params);

}  // namespace meshplan::planner
