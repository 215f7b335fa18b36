#include "simulator/plan_simulation.h"

#include <chrono>
#include <optional>
#include <utility>

#include "core/kernel_time.h"
#include "planner/plan_schedule.h"
#include "planner/schemes/registry.h"
#include "simulator/rank_symmetry.h"

namespace meshplan::sim {
namespace {

// The translation group the topology and placement allow for `plan` (rank_symmetry.h), or why
// there is none.
Result<RankSymmetry> CandidateSymmetry(const Plan& plan, const Topology& topology) {
  const std::vector<RankDim> dims = planner::RankDims(plan.params);
  if (!ValidatePlacement(dims, plan.params.placement).ok())
    return Status::Invalid("the placement is invalid");
  std::vector<int64_t> sizes;
  int64_t ranks = 1;
  for (const RankDim& d : dims) {
    sizes.push_back(d.size);
    ranks *= d.size;
  }
  if (ranks != topology.num_gpus()) return Status::Invalid("the rank grid does not cover the GPUs");
  const Placement placement(dims, plan.params.placement);
  std::vector<int64_t> rank_to_gpu(static_cast<size_t>(ranks));
  for (int64_t r = 0; r < ranks; ++r) rank_to_gpu[static_cast<size_t>(r)] = placement.GpuOf(r);
  return FindTopologySymmetry(sizes, rank_to_gpu, topology);
}

std::vector<std::string> DimNames(const Plan& plan) {
  std::vector<std::string> names;
  for (const RankDim& d : planner::RankDims(plan.params)) names.push_back(d.name);
  return names;
}

}  // namespace

Result<PlanSimulation> SimulatePlan(const Plan& plan, const Topology& topology,
                                    const SimOptions& caller_options) {
  SimOptions options = caller_options;
  options.head_dim = plan.workload.head_dim;
  // Without op times the replay needs only the timing view (simulator/coalesce.h): make it, and
  // its replay form (replay_view.h), rank by rank as the expansion completes each rank, so that
  // neither the full schedule (P^2 blocks for Mesh) nor the view's ops ever sit in memory whole.
  // SimulateReplayView's result is Simulate's on the full schedule.
  const bool view_only =
      !options.record_op_times && options.coalesce_compute && topology.gpu.ranks_per_device <= 1;
  // Symmetry classes: only representatives' views are made; every rank's program is checked
  // against its images (SymmetryCheck) as the expansion hands it over. A failed check expands
  // again without them.
  std::string symmetry_note;
  std::optional<RankSymmetry> symmetry;
  if (!options.use_symmetry) {
    symmetry_note = "off (--no-symmetry)";
  } else if (!view_only) {
    symmetry_note = "off (a replay with op times or without the timing view replays every rank)";
  } else {
    auto candidate = CandidateSymmetry(plan, topology);
    if (candidate.ok()) {
      symmetry = std::move(candidate).value();
    } else {
      symmetry_note = "off (" + candidate.status().message() + ")";
    }
  }
  for (;;) {
    ReplayViewSink sink(view_only ? topology.num_gpus() : 0);
    std::optional<SymmetryCheck> check;
    if (symmetry) check.emplace(*symmetry, DimNames(plan));
    bool checking = check.has_value();  // no pair has failed yet
    bool dropped = false;               // a rank's program was dropped unviewed
    planner::RankProgramHook hook;
    int64_t handed = 0;
    if (view_only) {
      hook = [&](int64_t rank, RankProgram& program) {
        if (options.expansion_progress) options.expansion_progress(++handed, topology.num_gpus());
        if (checking) checking = check->Take(rank, program);
        if (checking && !symmetry->IsRepresentative(rank)) {
          dropped = true;
          program = RankProgram{};
          return;
        }
        sink.Take(rank, program);
      };
    }
    MESHPLAN_ASSIGN_OR_RETURN(auto expanded, planner::ExpandPlan(plan, topology, hook));
    if (check) {
      const Status verified = check->Verify(expanded.schedule.groups);
      if (!verified.ok()) {
        symmetry_note = "off (" + verified.message() + ")";
        symmetry.reset();
        check.reset();
        // Every rank's view was kept once the check failed; ranks dropped before need a second
        // expansion.
        if (dropped) continue;
      } else {
        symmetry_note = symmetry->Describe(DimNames(plan));
      }
    }
    PlanSimulation out;
    out.estimate = std::move(expanded.estimate);
    out.rank_to_gpu = std::move(expanded.rank_to_gpu);
    out.symmetry = symmetry_note;
    out.symmetric = symmetry.has_value();

    const auto start = std::chrono::steady_clock::now();
    auto result = [&]() -> Result<SimResult> {
      if (view_only) {
        out.schedule.scheme = expanded.schedule.scheme;
        out.schedule.num_ranks = expanded.schedule.num_ranks;
        out.schedule.layout = expanded.schedule.layout;
        MESHPLAN_ASSIGN_OR_RETURN(auto view, sink.Finish(std::move(expanded.schedule)));
        return SimulateReplayView(std::move(view), topology, out.rank_to_gpu, plan.workload.dtype,
                                  options, symmetry ? &*symmetry : nullptr);
      }
      if (options.record_op_times) {
        out.schedule = std::move(expanded.schedule);
        return Simulate(out.schedule, topology, out.rank_to_gpu, plan.workload.dtype, options);
      }
      // Nothing reads the ops after the replay: let it free them as it builds its timing view.
      out.schedule.scheme = expanded.schedule.scheme;
      out.schedule.num_ranks = expanded.schedule.num_ranks;
      out.schedule.layout = expanded.schedule.layout;
      return Simulate(std::move(expanded.schedule), topology, out.rank_to_gpu, plan.workload.dtype,
                      options);
    }();
    out.replay_wall_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!result.ok()) return result.status();
    out.result = std::move(result).value();
    // The framework's fixed time around the kernels, as the planner adds it (EvaluatePlan).
    out.result.total_s += FrameworkOverheadSeconds(topology, plan.workload.pass);
    return out;
  }
}

}  // namespace meshplan::sim
