#include "simulator/simulation_timer.h"

#include <memory>
#include <vector>

#include "core/cost/kernel_time.h"
#include "planner/schemes/registry.h"
#include "planner/strategy.h"
#include "simulator/plan_simulation.h"
#include "simulator/simulate.h"

namespace meshplan::sim {

Result<double> SimulatedSeconds(const planner::PlanContext& ctx, const SchemeParams& params,
                                const SimOptions& options) {
  // The plan these parameters make on ctx's cluster, replayed as `meshplan simulate` replays a
  // plan file (timing view, symmetry classes, the memory limit): one path for both.
  Plan plan;
  plan.params = params;
  plan.workload = ctx.workload;
  plan.topology_name = ctx.topology.name;
  plan.attention_kernel = ctx.topology.gpu.attention_kernel;
  plan.num_gpus = ctx.topology.num_gpus();
  SimOptions replay = options;
  replay.record_op_times = false;
  MESHPLAN_ASSIGN_OR_RETURN(auto simulated, SimulatePlan(plan, ctx.topology, replay));
  return simulated.result.total_s;  // the framework's overhead included (SimulatePlan)
}

Result<double> SimulationTimer::Seconds(const planner::PlanContext& ctx,
                                        const SchemeParams& params) {
  ++calls_;
  if (before_replay_) before_replay_(calls_);
  return SimulatedSeconds(ctx, params);
}

}  // namespace meshplan::sim
