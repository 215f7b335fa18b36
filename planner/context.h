// What every strategy needs to evaluate a plan: the workload, the cluster, and derived sizes.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <tuple>
#include <utility>
#include <vector>

#include "core/cluster/topology.h"
#include "core/cost/attention_flops.h"
#include "core/cost/kernel_time.h"
#include "core/plan/schedule.h"
#include "core/sequence/layout.h"
#include "core/sequence/mask.h"
#include "core/workload/workload.h"
#include "planner/comm_model.h"

namespace meshplan::planner {

// Byte sizes of one rank's shards (ALGORITHMS.md notation): X = B*(S/P)*d*e is one head of one
// rank's shard. Partials travel in workload.partial_dtype; LSE and D are fp32.
struct ShardBytes {
  double q = 0;            // |Q| = |O| = |dO| = Hq*X
  double kv = 0;           // |KV| = 2*Hkv*X
  double o_partial = 0;    // |O_p| = Hq*X in the partial dtype
  double lse = 0;          // |LSE| = |D| = B*(S/P)*Hq*4
  double dq_partial = 0;   // partial dQ in the partial dtype
  double dkv_partial = 0;  // partial dK+dV in the partial dtype
};
ShardBytes ComputeShardBytes(const Workload& workload, int64_t num_ranks);

// Receives rank `rank`'s program as soon as an expansion has completed it (the programs of
// different ranks do not depend on one another) and may replace it, e.g. with the simulator's
// smaller timing view, so that a consumer never holds every rank's full program at once.
// Returns false to stop the expansion (its consumer has seen enough: a replay over its memory
// limit); the expansion then ends with sched::ExpansionStopped().
using RankProgramHook = std::function<bool(int64_t rank, RankProgram& program)>;

// REQUIRES: workload.Validate() and topology.Validate() are ok; both outlive the context.
// Not thread-safe: it caches routes and per-rank work across evaluations.
struct PlanContext {
  PlanContext(const Workload& w, const Topology& t, double reserved_bytes = 0)
      : workload(w),
        topology(t),
        counter(w.mask, w.seq_len),
        num_ranks(t.num_gpus()),
        shard(ComputeShardBytes(w, t.num_gpus())),
        reserved_memory_bytes(reserved_bytes),
        comm(std::make_unique<CommModel>(t)) {}
  const Workload& workload;
  const Topology& topology;
  PairCounter counter;  // unmasked pairs of the workload's mask
  int64_t num_ranks;    // P = every GPU of the topology
  ShardBytes shard;
  double reserved_memory_bytes;     // held back for weights, optimizer state, other activations
  std::unique_ptr<CommModel> comm;  // route cache shared by all evaluations
  // When set, Strategy::Expand may hand each rank's program to it as soon as that program is
  // complete (and must leave whatever it puts there in place); ExpandPlan calls it afterwards
  // for every rank the expansion did not. Empty: expansions ignore it.
  RankProgramHook rank_done;
  // When set, an expansion that proves its translation invariance
  // (Strategy::ProveTranslationInvariance) emits only the ranks for which it returns true; the
  // others' programs stay empty and are not handed to rank_done. Other expansions ignore it.
  std::function<bool(int64_t rank)> expand_rank;

  // The shard layout of `kind` for this workload (MakeShardLayout in core/sequence/layout.h): a
  // balanced layout's chunks are computed once per shard count and shared.
  ShardLayout LayoutFor(Layout kind, int64_t shards, int64_t subdivide) const;

  // Unmasked pairs per shard (1-D family) or per rank (2-D family), cached by layout and tile.
  const std::vector<int64_t>& RowPairsFor(const ShardLayout& layout) const;
  const std::vector<int64_t>& TilePairsFor(const ShardLayout& layout, int64_t a) const;
  // Cut rows per rank (TileCutRows; a = 1 for the 1-D family), cached likewise.
  const std::vector<int64_t>& TileCutRowsFor(const ShardLayout& layout, int64_t a) const;
  // Blocks per rank that merge their partials into a Q accumulator already holding a block
  // (TileMergedBlocks; a = 1 for the 1-D family), cached likewise.
  const std::vector<int64_t>& TileMergedBlocksFor(const ShardLayout& layout, int64_t a) const;
  // The merges to charge beside the busiest rank's kernels (`kernel_s`, launches left out) so
  // that kernels plus merges (`merge_s` each) are the longest any rank has: max over ranks of
  // merges - (1 - work / busiest work) x kernel_s / merge_s, at least 0, work being a rank's pairs
  // plus its cut rows' extra (as KernelForwardFlopsMax). A rank with less work but more merges
  // (a document mask's busiest rank is seldom the one with the most non-empty blocks) sets it
  // when its merges outweigh its lighter kernels. RingStepSeconds charges it.
  double BusiestRankMerges(const ShardLayout& layout, int64_t a, double kernel_s,
                           double merge_s) const;

  // Forward FLOPs the busiest rank's kernels spend on `pairs` (RowPairsFor, or TilePairsFor(layout,
  // a)): max over ranks of pairs + GpuSpec::cut_row_extra_pairs x cut rows (TileCutRowsFor), at
  // `heads` query heads. The simulator charges each compute op the same (simulator/simulate.cc);
  // without a cut cost this is ForwardFlops(max pairs).
  double KernelForwardFlopsMax(const std::vector<int64_t>& pairs, const ShardLayout& layout,
                               int64_t a, int64_t heads) const;

  // Forward FLOPs of `pairs` unmasked (q, k) pairs over `heads` query heads: 4*B*pairs*heads*d.
  double ForwardFlops(int64_t pairs, int64_t heads) const {
    return 4.0 * static_cast<double>(workload.batch) * static_cast<double>(pairs) *
           static_cast<double>(heads) * static_cast<double>(workload.head_dim);
  }

  // The shape of kernel calls on `layout`'s blocks over `heads` query heads of each sequence, as
  // `calls` meet packed documents (MakeKernelShape; the documents' tile fills cached by layout).
  // A scheme's schedule states the same calls (Schedule::kernel_calls) for the simulator.
  KernelShape ShapeOf(const ShardLayout& layout, int64_t heads,
                      KernelCalls calls = KernelCalls::kBlocks) const;

  // A backward kernel's time over the forward kernel's on the same block of `shape`: its FLOPs
  // (kBackwardFlopsFactor) over its relative rate (BackwardRateRatio: GpuSpec::backward_rate_ratio
  // and the two passes' occupancy).
  double BackwardTimeFactor(KernelShape shape) const;

  // Seconds of the backward twin of forward kernels of `shape` that take forward_s over
  // `launches` launches: the FLOP part scales by BackwardTimeFactor, the launch overhead is paid
  // once per launch, as the simulator charges a backward kernel (simulator/simulate.cc KernelNs).
  // Scaling the whole forward time, launches included, overstated every backward kernel by
  // (factor - 1) launches.
  double BackwardSeconds(double forward_s, int64_t launches, KernelShape shape) const;

 private:
  using WorkKey = std::tuple<int, int64_t, int64_t>;  // layout kind, shards, a (0 for rows)
  mutable std::map<WorkKey, std::vector<int64_t>> work_cache_;
  mutable std::map<WorkKey, std::vector<int64_t>> cut_rows_cache_;
  mutable std::map<WorkKey, std::vector<int64_t>> merged_blocks_cache_;
  // NonemptyKvShards by layout (a = 0 in the key).
  mutable std::map<WorkKey, std::vector<std::vector<std::pair<int64_t, int64_t>>>> nonempty_cache_;
  mutable std::map<int64_t, std::shared_ptr<const BalancedChunks>> balanced_cache_;  // by shards
  using ShapeKey = std::tuple<int, int64_t, int>;        // layout kind, shards, KernelCalls
  mutable std::map<ShapeKey, KernelShape> shape_cache_;  // doc-zigzag's tile fills
  mutable std::shared_ptr<const std::vector<int64_t>> documents_;  // doc-zigzag's, made once
};

inline double PlanContext::BackwardTimeFactor(KernelShape shape) const {
  return kBackwardFlopsFactor / BackwardRateRatio(topology.gpu, shape);
}

inline double PlanContext::BackwardSeconds(double forward_s, int64_t launches,
                                           KernelShape shape) const {
  const double launch_s = static_cast<double>(launches) * topology.gpu.launch_overhead_s *
                          topology.gpu.SharedComputeSlowdown();
  return launch_s + (forward_s - launch_s) * BackwardTimeFactor(shape);
}

}  // namespace meshplan::planner
