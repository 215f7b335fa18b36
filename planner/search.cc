#include "planner/search.h"

#include <algorithm>

#include "planner/strategy.h"

namespace meshplan::planner {

SearchResult Search(const PlanContext& ctx, const SearchOptions& options) {
  SearchResult result;
  std::vector<Scheme> schemes = options.schemes;
  if (schemes.empty()) schemes.assign(std::begin(kAllSchemes), std::end(kAllSchemes));
  for (Scheme scheme : schemes) {
    const std::unique_ptr<Strategy> strategy = MakeStrategy(scheme);
    Estimate first_invalid;
    bool any_valid = false;
    for (const SchemeParams& params : strategy->Enumerate(ctx)) {
      Estimate e = strategy->Evaluate(ctx, params);
      ++result.evaluated;
      if (e.valid) {
        any_valid = true;
        result.ranked.push_back(std::move(e));
      } else if (first_invalid.reason.empty()) {
        first_invalid = std::move(e);
      }
    }
    if (!any_valid) {
      if (first_invalid.reason.empty()) {
        first_invalid.params.scheme = scheme;
        first_invalid.reason = "no parameter choice applies to this cluster";
      }
      result.rejected.push_back(std::move(first_invalid));
    }
  }
  std::stable_sort(result.ranked.begin(), result.ranked.end(), [](const Estimate& x, const Estimate& y) {
    if (x.fits != y.fits) return x.fits;
    if (x.time_s != y.time_s) return x.time_s < y.time_s;
    return x.bytes_per_rank < y.bytes_per_rank;
  });
  return result;
}

Plan MakePlan(const PlanContext& ctx, const SchemeParams& params) {
  Plan plan;
  plan.params = params;
  plan.workload = ctx.workload;
  plan.topology_name = ctx.topology.name;
  plan.topology_source = ctx.topology.source;
  plan.num_gpus = ctx.topology.num_gpus();
  return plan;
}

}  // namespace meshplan::planner
