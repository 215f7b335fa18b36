#include "simulator/plan_simulation.h"

#include <chrono>
#include <utility>

#include "planner/plan_schedule.h"

namespace meshplan::sim {

Result<PlanSimulation> SimulatePlan(const Plan& plan, const Topology& topology,
                                    const SimOptions& options) {
  // Without op times the replay needs only the timing view (simulator/coalesce.h): make it, and
  // its replay form (replay_view.h), rank by rank as the expansion completes each rank, so that
  // neither the full schedule (P^2 blocks for Mesh) nor the view's ops ever sit in memory whole.
  // SimulateReplayView's result is Simulate's on the full schedule.
  const bool view_only =
      !options.record_op_times && options.coalesce_compute && topology.gpu.ranks_per_device <= 1;
  ReplayViewSink sink(view_only ? topology.num_gpus() : 0);
  planner::RankProgramHook hook;
  if (view_only) hook = [&sink](int64_t rank, RankProgram& program) { sink.Take(rank, program); };
  auto expanded = planner::ExpandPlan(plan, topology, hook);
  if (!expanded.ok()) return expanded.status();
  PlanSimulation out;
  out.estimate = std::move(expanded->estimate);
  out.rank_to_gpu = std::move(expanded->rank_to_gpu);

  const auto start = std::chrono::steady_clock::now();
  auto result = [&]() -> Result<SimResult> {
    if (view_only) {
      out.schedule.scheme = expanded->schedule.scheme;
      out.schedule.num_ranks = expanded->schedule.num_ranks;
      out.schedule.layout = expanded->schedule.layout;
      auto view = sink.Finish(std::move(expanded->schedule));
      if (!view.ok()) return view.status();
      return SimulateReplayView(std::move(view).value(), topology, out.rank_to_gpu, plan.workload.dtype, options);
    }
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
