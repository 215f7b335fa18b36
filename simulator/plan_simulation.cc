#include "simulator/plan_simulation.h"

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "planner/context.h"
#include "planner/strategy.h"

namespace meshplan::sim {

Result<PlanSimulation> SimulatePlan(const Plan& plan, const Topology& topology,
                                    const SimOptions& options) {
  const std::string scheme(SchemeName(plan.params.scheme));
  if (plan.num_gpus != topology.num_gpus()) {
    return Status::Invalid("plan for " + std::to_string(plan.num_gpus) + " GPUs (made for '" +
                           plan.topology_name + "') does not match topology '" + topology.name +
                           "' (" + topology.source + ") with " +
                           std::to_string(topology.num_gpus()) + " GPUs");
  }
  MESHPLAN_RETURN_IF_ERROR(topology.SupportsDType(plan.workload.dtype));

  const planner::PlanContext ctx(plan.workload, topology);
  const std::unique_ptr<planner::Strategy> strategy = planner::MakeStrategy(plan.params.scheme);
  if (strategy == nullptr) return Status::Internal("no strategy for scheme '" + scheme + "'");
  PlanSimulation out;
  out.estimate = strategy->Evaluate(ctx, plan.params);
  if (!out.estimate.valid) {
    return Status::Invalid("plan " + scheme + " " + plan.params.Describe() +
                           " is not valid on topology '" + topology.name +
                           "': " + out.estimate.reason);
  }
  // Evaluate checks the placement; check again because Placement's constructor requires it.
  const std::vector<RankDim> dims = plan.params.RankDims();
  MESHPLAN_RETURN_IF_ERROR(
      ValidatePlacement(dims, plan.params.placement).WithContext("scheme.placement"));

  auto schedule = strategy->Expand(ctx, plan.params);
  if (!schedule.ok()) return schedule.status();
  out.schedule = std::move(schedule).value();

  const Placement placement(dims, plan.params.placement);
  out.rank_to_gpu.resize(static_cast<size_t>(out.schedule.num_ranks));
  for (int64_t r = 0; r < out.schedule.num_ranks; ++r)
    out.rank_to_gpu[static_cast<size_t>(r)] = placement.GpuOf(r);

  const auto start = std::chrono::steady_clock::now();
  auto result = Simulate(out.schedule, topology, out.rank_to_gpu, plan.workload.dtype, options);
  out.replay_wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!result.ok()) return result.status();
  out.result = std::move(result).value();
  return out;
}

}  // namespace meshplan::sim
