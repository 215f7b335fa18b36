// Discrete-event replay of a schedule on a topology: flow-level network with max-min fair
// sharing, compute and communication streams per GPU, collectives decomposed into point-to-point
// flows the way NCCL's ring algorithm (and direct all-to-all) runs them. docs/simulator.md.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/base/dtype.h"
#include "core/base/status.h"
#include "core/cluster/topology.h"
#include "core/plan/schedule.h"
#include "simulator/coalesce.h"
#include "simulator/rank_symmetry.h"
#include "simulator/replay_view.h"
#include "simulator/sim_time.h"

namespace meshplan::sim {

struct SimOptions {
  // The workload's head dim, which scales the kernel rate (GpuSpec::HeadDimRateFactor); 0: the
  // rate of the curve's own head dim. SimulatePlan and SimulatedSeconds set it from the plan.
  int64_t head_dim = 0;
  // Sequences x query heads one kernel call covers (the plan's batch x its heads per rank,
  // KernelBatchHeads), which sets how fully the kernel fills the GPU
  // (core/cost/kernel_occupancy.h); 0: the curve's own occupancy. SimulatePlan and SimulatedSeconds
  // set it from the plan.
  int64_t kernel_batch_heads = 0;
  // The plan's mask kind: causal documents (MaskKind::kDocuments) or bidirectional ones set the
  // tile fills of kernels on packed documents (MakeKernelShape). SimulatePlan and
  // SimulatedSeconds set it from the plan.
  MaskKind mask_kind = MaskKind::kCausal;
  bool record_op_times = true;  // keep every op's start and end (needed for traces)
  // Replay the timing view of the schedule (simulator/coalesce.h): runs of compute ops that time
  // as one are one op. The result is the same up to a nanosecond per merged op (op times are
  // split back onto the schedule's ops); the replay processes fewer events. Off: every op.
  bool coalesce_compute = true;
  // Replay one representative per symmetry class where the plan, placement and network allow it
  // and the expanded programs prove it (rank_symmetry.h; SimulatePlan without op times only).
  // The result is the full replay's up to rounding (docs/simulator.md); off: every rank.
  bool use_symmetry = true;
  // With use_symmetry: where the plan's scheme proves the symmetry from its structure
  // (planner::ProveTranslationInvariance), expand only the representatives and their images
  // under each generator (digested and compared as a spot check) instead of every rank. Off:
  // every rank's program is expanded and digested (tests compare the two).
  bool structural_symmetry = true;
  // Called every kProgressEvents events with the ops completed so far and the schedule's ops (may
  // be empty). The caller decides what to show and when; the replay does not look at the clock.
  std::function<void(int64_t done_ops, int64_t total_ops)> progress;
  // SimulatePlan only: called as the expansion hands over each rank's program (Mesh schedules
  // hand them over while expanding; the others after), with the ranks handed over so far.
  std::function<void(int64_t done_ranks, int64_t total_ranks)> expansion_progress;
  // SimulatePlan only, > 0: the host memory the replay may use. After each rank's program the
  // need is projected from the programs seen so far (ProjectedReplayBytes); past the limit the
  // expansion keeps no more programs and SimulatePlan fails with one line (kInvalidInput) naming
  // the need, the limit and `memory_limit_source`, before the replay allocates anything.
  double memory_limit_bytes = 0;
  std::string memory_limit_source;
  // SimulatePlan only, > 0: the ops the expansion may emit over all ranks, projected after each
  // rank (their mean so far times the ranks); past it the expansion stops and SimulatePlan fails
  // with one line (kInvalidInput). Emission runs at about 20M ops/s on one core (a 16384-rank
  // Mesh plan, 540M ops, takes 27 s), so the default 2^31 refuses replays that would expand for
  // minutes: a Ring plan on 65536 GPUs emits 65536^2 x 2 = 8.6G ops. simulate --max-ops sets it.
  int64_t max_expansion_ops = int64_t{1} << 31;
};

// The host memory a replay of `kept_ranks` programs needs, projected from `seen_program_bytes`,
// the expanded programs (ops and deps) of the first `seen_ranks` of them: their mean times the
// ranks kept, times the replay's own state per program byte (measured: docs/simulator.md).
double ProjectedReplayBytes(double seen_program_bytes, int64_t seen_ranks, int64_t kept_ranks,
                            bool view_only);

inline constexpr int64_t kProgressEvents = int64_t{1} << 16;

struct OpTime {
  SimTime start = 0;
  SimTime end = 0;
};

struct RankStats {
  double compute_s = 0;       // compute-stream busy time (computes and merges)
  double exposed_comm_s = 0;  // rank's last op end - compute_s: time its compute stream waited
  double idle_s = 0;          // total - rank's last op end: waiting for the slowest rank
  double bytes_sent = 0;
};

struct LevelStats {
  std::string name;
  double bytes = 0;        // bytes carried over this level, all GPUs (sent side)
  double utilization = 0;  // bytes / (GPUs * per-GPU bandwidth * total time)
  // Ring and torus levels: the neighbour link that carried the most bytes (empty name when none
  // did, and on other levels), its bytes and its bytes / (capacity * total time): congestion
  // inside the level shows here, where the level's average utilisation hides it.
  std::string busiest_link;
  double busiest_link_bytes = 0;
  double busiest_link_utilization = 0;
};

struct SimResult {
  double total_s = 0;
  std::vector<RankStats> ranks;
  std::vector<LevelStats> levels;
  std::string critical_path;  // the chain of ops that set the end time, summarised in words
  int64_t events = 0;         // events processed
  int64_t flows = 0;          // point-to-point flows simulated (collectives decomposed)
  std::vector<std::vector<OpTime>> op_times;  // [rank][op], when options.record_op_times
};

// Replays `schedule`. rank_to_gpu[r] is the GPU of rank r (a permutation of the topology's GPUs);
// dtype selects the GPU's peak rate. Errors (one line): a schedule that does not fit the topology,
// an unknown dtype, or a deadlock (names the stuck ops).
Result<SimResult> Simulate(const Schedule& schedule, const Topology& topology,
                           const std::vector<int64_t>& rank_to_gpu, DType dtype,
                           const SimOptions& options = {});
// The same, consuming the schedule: without op times (options.record_op_times false) the timing
// view is made rank by rank while the schedule's programs are freed, so that a large schedule and
// its view never both sit in memory.
Result<SimResult> Simulate(Schedule&& schedule, const Topology& topology,
                           const std::vector<int64_t>& rank_to_gpu, DType dtype,
                           const SimOptions& options = {});

// Replays a timing view made beforehand, e.g. rank by rank during the expansion
// (CoalescingSink, coalesce.h), so that the full schedule never existed: the result is that of
// Simulate on the schedule the view came from. Without op times only (they are split back onto
// the original ops, which are gone): options.record_op_times true, or ranks that share a device
// (the view is not valid there, coalesce.h), are errors.
Result<SimResult> SimulateView(CoalescedSchedule&& view, const Topology& topology,
                               const std::vector<int64_t>& rank_to_gpu, DType dtype,
                               const SimOptions& options = {});

// Replays the replay form of a timing view (ReplayViewSink, replay_view.h: made during the
// expansion, so that neither the full schedule nor the view's 72-byte ops ever existed whole): the
// result is that of Simulate on the schedule the view came from. Errors as SimulateView's.
// With `symmetry` (rank_symmetry.h; the caller verified it, and only representatives have
// programs in `view`), only representatives are replayed and every other rank reports its
// representative's statistics; level bytes and flow counts count every rank's; events are those
// processed. Errors also: groups the symmetry does not map (MapGroups), a network it does not map
// onto itself (FlowNetwork::UseSymmetry).
Result<SimResult> SimulateReplayView(ReplayView&& view, const Topology& topology,
                                     const std::vector<int64_t>& rank_to_gpu, DType dtype,
                                     const SimOptions& options = {},
                                     const RankSymmetry* symmetry = nullptr);

}  // namespace meshplan::sim
