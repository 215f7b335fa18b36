#include "planner/plan_schedule.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "planner/context.h"
#include "planner/evaluate_plan.h"
#include "planner/schedule_builder.h"
#include "planner/schemes/registry.h"
#include "planner/strategy.h"

namespace meshplan::planner {

Result<PlanSchedule> ExpandPlan(const Plan& plan, const Topology& topology,
                                const RankProgramHook& rank_done,
                                const std::function<bool(int64_t rank)>& expand_rank) {
  const std::string scheme(SchemeName(plan.params.scheme));
  if (plan.num_gpus != topology.num_gpus()) {
    return Status::Invalid("plan for " + std::to_string(plan.num_gpus) + " GPUs (made for '" +
                           plan.topology_name + "') does not match topology '" + topology.name +
                           "' (" + topology.source + ") with " +
                           std::to_string(topology.num_gpus()) + " GPUs");
  }
  MESHPLAN_RETURN_IF_ERROR(topology.SupportsDType(plan.workload.dtype));

  PlanContext ctx(plan.workload, topology);
  std::vector<uint8_t> handed(rank_done ? static_cast<size_t>(topology.num_gpus()) : 0, 0);
  if (rank_done) {
    ctx.rank_done = [&](int64_t rank, RankProgram& program) {
      handed[static_cast<size_t>(rank)] = 1;
      return rank_done(rank, program);
    };
  }
  const std::unique_ptr<Strategy> strategy = MakeStrategy(plan.params.scheme);
  if (strategy == nullptr) return Status::Internal("no strategy for scheme '" + scheme + "'");
  // Only a proven expansion may leave ranks out.
  const bool filtered = expand_rank && strategy->ProveTranslationInvariance(ctx, plan.params).ok();
  if (filtered) ctx.expand_rank = expand_rank;
  PlanSchedule out;
  out.estimate = EvaluatePlan(ctx, *strategy, plan.params);
  if (!out.estimate.valid) {
    return Status::Invalid("plan " + scheme + " " + DescribeParams(plan.params) +
                           " is not valid on topology '" + topology.name +
                           "': " + out.estimate.reason);
  }
  // Evaluate checks the placement; check again because Placement's constructor requires it.
  const std::vector<RankDim> dims = RankDims(plan.params);
  MESHPLAN_RETURN_IF_ERROR(
      ValidatePlacement(dims, plan.params.placement).WithContext("scheme.placement"));

  auto schedule = strategy->Expand(ctx, plan.params);
  if (!schedule.ok()) return schedule.status();
  out.schedule = std::move(schedule).value();
  if (rank_done) {
    for (size_t r = 0; r < out.schedule.ranks.size(); ++r) {
      if (filtered && !expand_rank(static_cast<int64_t>(r))) continue;
      if (handed[r] == 0 && !rank_done(static_cast<int64_t>(r), out.schedule.ranks[r]))
        return sched::ExpansionStopped();
    }
  }

  const Placement placement(dims, plan.params.placement);
  out.rank_to_gpu.resize(static_cast<size_t>(out.schedule.num_ranks));
  for (int64_t r = 0; r < out.schedule.num_ranks; ++r)
    out.rank_to_gpu[static_cast<size_t>(r)] = placement.GpuOf(r);
  return out;
}

Status ProveTranslationInvariance(const Plan& plan, const Topology& topology) {
  if (plan.num_gpus != topology.num_gpus())
    return Status::Invalid("the plan is for another GPU count");
  MESHPLAN_RETURN_IF_ERROR(topology.SupportsDType(plan.workload.dtype));
  const std::unique_ptr<Strategy> strategy = MakeStrategy(plan.params.scheme);
  if (strategy == nullptr) return Status::Internal("no strategy for the plan's scheme");
  const PlanContext ctx(plan.workload, topology);
  if (!EvaluatePlan(ctx, *strategy, plan.params).valid)
    return Status::Invalid("the plan is not valid on the topology");
  return strategy->ProveTranslationInvariance(ctx, plan.params);
}

}  // namespace meshplan::planner
