#include "simulator/plan_simulation.h"

#include <chrono>
#include <utility>

#include "planner/plan_schedule.h"

namespace meshplan::sim {

Result<PlanSimulation> SimulatePlan(const Plan& plan, const Topology& topology,
                                    const SimOptions& options) {
  auto expanded = planner::ExpandPlan(plan, topology);
  if (!expanded.ok()) return expanded.status();
  PlanSimulation out;
  out.estimate = std::move(expanded->estimate);
  out.rank_to_gpu = std::move(expanded->rank_to_gpu);

  const auto start = std::chrono::steady_clock::now();
  auto result = [&]() -> Result<SimResult> {
    if (options.record_op_times) {
      out.schedule = std::move(expanded->schedule);
      return Simulate(out.schedule, topology, out.rank_to_gpu, plan.workload.dtype, options);
    }
    // Nothing reads the ops after the replay: let it free them as it builds its timing view.
    out.schedule.scheme = expanded->schedule.scheme;
    out.schedule.num_ranks = expanded->schedule.num_ranks;
    out.schedule.layout = expanded->schedule.layout;
    return Simulate(std::move(expanded->schedule), topology, out.rank_to_gpu, plan.workload.dtype, options);
  }();
  out.replay_wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!result.ok()) return result.status();
  out.result = std::move(result).value();
  return out;
}

}  // namespace meshplan::sim
