#include "simulator/plan_simulation.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <optional>
#include <utility>

#include "core/base/units.h"
#include "core/cost/kernel_time.h"
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

double ProgramBytes(const RankProgram& program) {
  return static_cast<double>(program.ops.capacity() * sizeof(Op) +
                             program.deps.capacity() * sizeof(uint32_t));
}

// The one line for a replay whose projected need passed the limit, with the GPU count that
// would fit if the need grows as the square of the GPUs (ranks x ops per rank, both ~P for the
// ring family; the Mesh family grows slower, so the figure is a floor).
Status MemoryRefusal(double projected_bytes, double program_bytes, int64_t kept_ranks, int64_t gpus,
                     const SimOptions& options, const std::string& symmetry_note) {
  const double scale = std::sqrt(options.memory_limit_bytes / projected_bytes);
  int64_t fit = 1;
  while (fit * 2 <= static_cast<int64_t>(static_cast<double>(gpus) * scale)) fit *= 2;
  const std::string programs = kept_ranks == 1
                                   ? "one rank's program of about " + FormatBytes(program_bytes)
                                   : std::to_string(kept_ranks) + " ranks' programs of about " +
                                         FormatBytes(program_bytes) + " each";
  // symmetry_note is empty while the classes are in use (it is set once they are proven).
  const std::string classes = symmetry_note.empty() ? ": the symmetry classes' representatives"
                                                    : "; symmetry classes " + symmetry_note;
  return Status::Invalid(
      "replaying this plan needs about " + FormatBytes(projected_bytes) + " of host memory (" +
      programs + classes + "), more than " + FormatBytes(options.memory_limit_bytes) + " (" +
      options.memory_limit_source + "); at most about " + std::to_string(fit) +
      (fit == 1 ? " GPU" : " GPUs") + " of this plan fit; --max-memory sets the limit");
}

}  // namespace

double ProjectedReplayBytes(double seen_program_bytes, int64_t seen_ranks, int64_t kept_ranks,
                            bool view_only) {
  // The replay's peak per byte of expanded program kept, measured on 1024-GPU plans (peak RSS
  // over the programs' bytes, docs/simulator.md): 0.53 (Mesh) to 1.0 (Ring) for the timing view,
  // 1.9 to 2.1 with op times (the full schedule beside its replay state).
  const double state_per_program_byte = view_only ? 1.0 : 2.1;
  return seen_program_bytes / static_cast<double>(std::max<int64_t>(seen_ranks, 1)) *
         static_cast<double>(kept_ranks) * state_per_program_byte;
}

Result<PlanSimulation> SimulatePlan(const Plan& plan, const Topology& topology,
                                    const SimOptions& caller_options) {
  SimOptions options = caller_options;
  options.head_dim = plan.workload.head_dim;
  options.kernel_batch_heads = KernelBatchHeads(plan);
  options.mask_kind = plan.workload.mask.kind;
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
  // Where the scheme proves the symmetry from the plan's structure, only the representatives and
  // their images under each generator are expanded (the pairs digested as a spot check of the
  // proof); a failed spot check falls back to digesting every rank.
  bool proven = false;
  std::string unproven;  // why not, for the note
  if (symmetry && !options.structural_symmetry) unproven = "structural proofs off";
  if (symmetry && options.structural_symmetry) {
    const Status proof = planner::ProveTranslationInvariance(plan, topology);
    proven = proof.ok();
    if (!proven) unproven = proof.message();
  }
  std::vector<uint8_t> expanded_rank;  // proven: the ranks the spot check expands
  for (;;) {
    std::function<bool(int64_t)> expand_rank;
    int64_t expanded_ranks = topology.num_gpus();  // the ranks this expansion emits
    if (proven) {
      expanded_rank.assign(static_cast<size_t>(topology.num_gpus()), 0);
      const std::vector<int> generators = symmetry->Generators();
      for (int64_t r = 0; r < topology.num_gpus(); ++r) {
        if (!symmetry->IsRepresentative(r)) continue;
        expanded_rank[static_cast<size_t>(r)] = 1;
        for (int d : generators) expanded_rank[static_cast<size_t>(symmetry->Apply(d, r))] = 1;
      }
      expand_rank = [&](int64_t r) { return expanded_rank[static_cast<size_t>(r)] != 0; };
      expanded_ranks = std::count(expanded_rank.begin(), expanded_rank.end(), uint8_t{1});
    }
    ReplayViewSink sink(view_only ? topology.num_gpus() : 0);
    std::optional<SymmetryCheck> check;
    if (symmetry) check.emplace(*symmetry, DimNames(plan));
    bool checking = check.has_value();  // no pair has failed yet
    bool dropped = false;               // a rank's program was dropped unviewed
    // The memory the replay will need, projected as the programs come (SimOptions): the
    // symmetry classes' representatives while the check holds, every rank once it has failed
    // (from then on every program is kept).
    int64_t kept_ranks = symmetry ? symmetry->Classes() : topology.num_gpus();
    double seen_bytes = 0, projected_bytes = 0;
    int64_t seen_ranks = 0;
    bool over_limit = false;
    auto keep = [&](RankProgram& program) {  // false: over the limit, program dropped
      if (options.memory_limit_bytes <= 0) return true;
      if (check && !checking) kept_ranks = topology.num_gpus();
      if (!over_limit) {
        seen_bytes += ProgramBytes(program);
        projected_bytes = ProjectedReplayBytes(seen_bytes, ++seen_ranks, kept_ranks, view_only);
        over_limit = projected_bytes > options.memory_limit_bytes;
      }
      if (over_limit) program = RankProgram{};
      return !over_limit;
    };
    // The ops of every rank's program, projected as they come (SimOptions::max_expansion_ops).
    double seen_ops = 0, projected_ops = 0;
    int64_t counted_ranks = 0;
    bool too_many_ops = false;
    auto count_ops = [&](const RankProgram& program) {  // false: past the limit
      if (options.max_expansion_ops <= 0) return true;
      seen_ops += static_cast<double>(program.ops.size());
      projected_ops =
          seen_ops / static_cast<double>(++counted_ranks) * static_cast<double>(expanded_ranks);
      too_many_ops = projected_ops > static_cast<double>(options.max_expansion_ops);
      return !too_many_ops;
    };
    planner::RankProgramHook hook;
    int64_t handed = 0;
    if (view_only) {
      hook = [&](int64_t rank, RankProgram& program) {
        if (options.expansion_progress) options.expansion_progress(++handed, expanded_ranks);
        if (!count_ops(program)) return false;
        if (checking) checking = check->Take(rank, program);
        if (checking && !symmetry->IsRepresentative(rank)) {
          dropped = true;
          program = RankProgram{};
          return true;
        }
        if (!keep(program)) return false;  // over the limit: stop the expansion
        sink.Take(rank, program);
        return true;
      };
    } else if (options.memory_limit_bytes > 0 || options.max_expansion_ops > 0) {
      hook = [&](int64_t, RankProgram& program) { return count_ops(program) && keep(program); };
    }
    auto expansion = planner::ExpandPlan(plan, topology, hook, expand_rank);
    if (too_many_ops) {
      return Status::Invalid(
          "replaying this plan expands about " + std::to_string(std::llround(projected_ops)) +
          " ops (" + std::to_string(expanded_ranks) + " ranks' programs of about " +
          std::to_string(std::llround(seen_ops / static_cast<double>(counted_ranks))) +
          " ops each), more than the limit of " + std::to_string(options.max_expansion_ops) +
          " (minutes of expansion at about 20M ops/s); the planner's estimate (plan) covers it, "
          "or fewer GPUs replay; simulate --max-ops sets the limit");
    }
    if (over_limit && check && !checking && symmetry_note.empty())
      symmetry_note = "off (a rank's program differs from its images: every rank is replayed)";
    if (over_limit) {
      return MemoryRefusal(projected_bytes, seen_bytes / static_cast<double>(seen_ranks),
                           kept_ranks, topology.num_gpus(), options, symmetry_note);
    }
    if (!expansion.ok()) return expansion.status();
    auto expanded = std::move(expansion).value();
    if (check) {
      const Status verified = check->Verify(expanded.schedule.groups, /*every_rank=*/!proven);
      if (!verified.ok() && proven) {
        // The proof's spot check failed (a fault in a scheme's proof): digest every rank.
        proven = false;
        unproven = "its spot check failed: " + verified.message();
        continue;
      }
      if (!verified.ok()) {
        symmetry_note = "off (" + verified.message() + ")";
        symmetry.reset();
        check.reset();
        // Every rank's view was kept once the check failed; ranks dropped before need a second
        // expansion.
        if (dropped) continue;
      } else {
        symmetry_note =
            symmetry->Describe(DimNames(plan)) +
            (proven ? ", proven from the plan's structure"
                    : ", every rank's program compared (no structural proof: " + unproven + ")");
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
    // The framework's fixed time around the kernels and the last rank's lag on a shared device,
    // as the planner adds them (EvaluatePlan).
    out.result.total_s += FrameworkOverheadSeconds(topology, plan.workload.pass) +
                          SharedDeviceEndLagSeconds(topology.gpu, out.result.total_s);
    return out;
  }
}

}  // namespace meshplan::sim
