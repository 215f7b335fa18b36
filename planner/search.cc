#include "planner/search.h"

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "planner/evaluate_plan.h"
#include "planner/schemes/registry.h"
#include "planner/strategy.h"

namespace meshplan::planner {

SearchResult Search(const PlanContext& ctx, const SearchOptions& options) {
  SearchResult result;
  std::vector<Scheme> schemes = options.schemes;
  if (schemes.empty()) schemes.assign(AllSchemes().begin(), AllSchemes().end());
  for (Scheme scheme : schemes) {
    const std::unique_ptr<Strategy> strategy = MakeStrategy(scheme);
    Estimate first_invalid;
    bool any_valid = false;
    for (const SchemeParams& params : strategy->Enumerate(ctx)) {
      Estimate e = EvaluatePlan(ctx, *strategy, params);
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
  std::stable_sort(result.ranked.begin(), result.ranked.end(),
                   [](const Estimate& x, const Estimate& y) {
                     if (x.fits != y.fits) return x.fits;
                     if (x.time_s != y.time_s) return x.time_s < y.time_s;
                     return x.bytes_per_rank < y.bytes_per_rank;
                   });
  return result;
}

Status RerankBySimulation(const PlanContext& ctx, PlanTimer& timer, int k, SearchResult* result) {
  if (k <= 0 || result == nullptr) return Status::Ok();
  const size_t n = std::min(static_cast<size_t>(k), result->ranked.size());
  std::vector<double> seconds(n);
  for (size_t i = 0; i < n; ++i) {
    const Estimate& e = result->ranked[i];
    auto s = timer.Seconds(ctx, e.params);
    if (!s.ok()) {
      return s.status().WithContext("simulating plan #" + std::to_string(i + 1) + " (" +
                                    std::string(SchemeName(e.params.scheme)) + " " +
                                    DescribeParams(e.params) + ")");
    }
    seconds[i] = *s;
  }
  for (size_t i = 0; i < n; ++i) result->ranked[i].simulated_s = seconds[i];
  const auto first = result->ranked.begin();
  std::stable_sort(first, first + static_cast<std::ptrdiff_t>(n),
                   [](const Estimate& x, const Estimate& y) {
                     if (x.fits != y.fits) return x.fits;
                     return x.simulated_s < y.simulated_s;
                   });
  return Status::Ok();
}

Plan MakePlan(const PlanContext& ctx, const SchemeParams& params) {
  Plan plan;
  plan.params = params;
  plan.workload = ctx.workload;
  plan.topology_name = ctx.topology.name;
  // A file is stored as an absolute path so the plan can be simulated from any directory.
  plan.topology_source = ctx.topology.source;
  plan.attention_kernel = ctx.topology.gpu.attention_kernel;
  if (!plan.topology_source.empty() && plan.topology_source != "built-in") {
    std::error_code error;
    const auto absolute = std::filesystem::absolute(plan.topology_source, error);
    if (!error) plan.topology_source = absolute.lexically_normal().string();
  }
  plan.num_gpus = ctx.topology.num_gpus();
  return plan;
}

}  // namespace meshplan::planner
