// The plan search: every scheme x parameters x placement x cache choice, ranked by estimated time.
#pragma once

#include <vector>

#include "core/plan.h"
#include "planner/context.h"
#include "planner/estimate.h"

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

// The plan file contents for an estimate.
Plan MakePlan(const PlanContext& ctx, const SchemeParams& params);

}  // namespace meshplan::planner
