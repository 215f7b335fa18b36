#include "tools/simulation_timer.h"

#include <cstdio>
#include <memory>
#include <utility>
#include <vector>

#include "planner/strategy.h"
#include "simulator/simulate.h"

namespace meshplan::tools {

Result<double> SimulationTimer::Seconds(const planner::PlanContext& ctx,
                                        const SchemeParams& params) {
  ++calls_;
  if (progress_) {
    std::fprintf(stderr, "meshplan: simulating plan %d/%d...\n", calls_, total_);
    std::fflush(stderr);
  }
  const std::unique_ptr<planner::Strategy> strategy = planner::MakeStrategy(params.scheme);
  auto schedule = strategy->Expand(ctx, params);
  if (!schedule.ok()) return schedule.status();
  const std::vector<RankDim> dims = params.RankDims();
  if (Status st = ValidatePlacement(dims, params.placement); !st.ok()) return st;
  const Placement placement(dims, params.placement);
  std::vector<int64_t> rank_to_gpu(static_cast<size_t>(schedule->num_ranks));
  for (int64_t r = 0; r < schedule->num_ranks; ++r)
    rank_to_gpu[static_cast<size_t>(r)] = placement.GpuOf(r);
  sim::SimOptions options;
  options.record_op_times = false;
  auto result = sim::Simulate(*schedule, ctx.topology, rank_to_gpu, ctx.workload.dtype, options);
  if (!result.ok()) return result.status();
  return result->total_s;
}

}  // namespace meshplan::tools
