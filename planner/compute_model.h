// Compute model: unmasked work per rank for the two assignment families, and kernel time.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "core/base/dtype.h"
#include "core/cluster/topology.h"
#include "core/cost/kernel_time.h"
#include "core/sequence/layout.h"
#include "core/sequence/mask.h"

namespace meshplan::planner {

// 1-D family (the schemes whose compute layout is one ring of shards, single or double, with or
// without head parallelism): shard i's queries against every key.
// Returns unmasked pairs per shard. O(N) for full/causal/window, O(N log D) for documents.
std::vector<int64_t> RowPairs(const ShardLayout& layout, const PairCounter& counter);

// 2-D family (the Mesh-Attention tile assignment, which every tile scheme uses, over n =
// layout.num_shards ranks, Q-group size a): rank g computes the Q shards of its Q group against the
// KV shards of its KV group. Returns unmasked pairs per rank. Closed forms for full and causal
// masks (O(n) or O(n*a)); window and document masks enumerate only the key chunks a query range can
// reach.
std::vector<int64_t> TilePairs(const ShardLayout& layout, const PairCounter& counter, int64_t a);

// Cut rows per rank of the 2-D family's assignment (a = 1: the 1-D family, shard i against every
// KV shard), summed over the rank's (q shard, kv shard) blocks as the schedule's compute ops count
// them (ShardLayout::Work, BlockWork::cut_rows): what GpuSpec::cut_row_extra_pairs is charged on.
// Closed forms for full and causal masks (causal balanced excepted); otherwise only the key
// chunks where a query range's first or last reachable key falls are looked at (the chunks
// between are whole, the ones outside empty).
std::vector<int64_t> TileCutRows(const ShardLayout& layout, const PairCounter& counter, int64_t a);

// Blocks per rank of the 2-D family's assignment (a = 1: the 1-D family, shard i against every KV
// shard) that are computed into a Q accumulator already holding a block, so merge their partials
// (RingStepPartialSeconds): for each of the rank's Q shards, its blocks with pairs but the first.
// A block without pairs is never computed (sched::EmitCompute), so it merges nothing: under a
// window or document mask most of a long ring's blocks are empty. Striped: every block counted
// (O(1) each); otherwise each Q range's reachable key chunks (ForEachPartialChunk), O(n a) per
// layout beyond them.
std::vector<int64_t> TileMergedBlocks(const ShardLayout& layout, const PairCounter& counter,
                                      int64_t a);

// The parts of TileMergedBlocks, for a caller that caches what does not depend on the tile:
// closed forms for full masks and causal masks on contiguous, zigzag and striped layouts (nullopt
// otherwise); for each Q shard the KV shards it meets in a block with pairs, as sorted disjoint
// intervals [first, last] (NonemptyKvShards, per layout); and the counts per rank from those
// (TileMergedBlocksFrom, O(n + intervals) per tile shape).
using ShardIntervals = std::vector<std::vector<std::pair<int64_t, int64_t>>>;
std::optional<std::vector<int64_t>> TileMergedBlocksClosedForm(const ShardLayout& layout,
                                                               const PairCounter& counter,
                                                               int64_t a);
ShardIntervals NonemptyKvShards(const ShardLayout& layout, const PairCounter& counter);
std::vector<int64_t> TileMergedBlocksFrom(const ShardIntervals& nonempty, int64_t a);

// The kernel time model lives in core so the simulator shares it.
using meshplan::KernelSeconds;

}  // namespace meshplan::planner
