#include "simulator/simulation_timer.h"

#include <memory>
#include <vector>

#include "core/kernel_time.h"
#include "planner/schemes/registry.h"
#include "planner/strategy.h"
#include "simulator/simulate.h"

namespace meshplan::sim {

Result<double> SimulatedSeconds(const planner::PlanContext& ctx, const SchemeParams& params) {
  const std::unique_ptr<planner::Strategy> strategy = planner::MakeStrategy(params.scheme);
  MESHPLAN_ASSIGN_OR_RETURN(auto schedule, strategy->Expand(ctx, params));
  const std::vector<RankDim> dims = planner::RankDims(params);
  MESHPLAN_RETURN_IF_ERROR(ValidatePlacement(dims, params.placement));
  const Placement placement(dims, params.placement);
  std::vector<int64_t> rank_to_gpu(static_cast<size_t>(schedule.num_ranks));
  for (int64_t r = 0; r < schedule.num_ranks; ++r)
    rank_to_gpu[static_cast<size_t>(r)] = placement.GpuOf(r);
  SimOptions options;
  options.record_op_times = false;
  options.head_dim = ctx.workload.head_dim;
  MESHPLAN_ASSIGN_OR_RETURN(
      auto result, Simulate(schedule, ctx.topology, rank_to_gpu, ctx.workload.dtype, options));
  return result.total_s + FrameworkOverheadSeconds(ctx.topology, ctx.workload.pass);
}

Result<double> SimulationTimer::Seconds(const planner::PlanContext& ctx,
                                        const SchemeParams& params) {
  ++calls_;
  if (before_replay_) before_replay_(calls_);
  return SimulatedSeconds(ctx, params);
}

}  // namespace meshplan::sim
