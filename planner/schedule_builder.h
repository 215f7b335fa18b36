// Building blocks shared by the schemes' schedule expansions (docs/schedules.md): block
// computes, collectives, tags, the rank-grid check. Communication patterns several schemes share
// keep their estimate and the ops they emit side by side in planner/patterns/ (the ring pass). Each
// scheme's expansion lives in its own file in planner/schemes/ and builds on these; the channels of
// every tag stay listed here so that they remain distinct.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/plan/schedule.h"
#include "planner/context.h"

namespace meshplan::planner::sched {

// Message channels; a tag is (phase, channel, step) so that a mismatch names its origin.
enum Channel : int32_t {
  kChanKv = 1,        // KV shift of a ring (a double ring's inner ring)
  kChanDkv = 2,       // dK+dV partial of an owner-last chain (a double ring's inner chain)
  kChanOuterKv = 3,   // a double ring's outer-ring KV shift
  kChanOuterDkv = 4,  // a double ring's outer-ring dK+dV chain
  kChanQ = 5,         // a tile's Q-group shift (Q forward; Q, dO, LSE, D backward)
  kChanQPartial = 6,  // a tile's Q-group chain (partial O+LSE forward, dQ backward)
};
inline int32_t MakeTag(Phase phase, Channel channel, int64_t step) {
  return (static_cast<int32_t>(phase) << 30) | (static_cast<int32_t>(channel) << 24) |
         static_cast<int32_t>(step & 0xFFFFFF);
}

// Whole bytes of an analytic size (ShardBytes sizes are exact integers held in doubles).
int64_t WholeBytes(double bytes);
// bytes * num / den, exact for the sizes this model produces (e.g. (U-1)/U * |Q|).
int64_t ScaledBytes(double bytes, int64_t num, int64_t den);

// Optional dependencies collected into a list (absent ones are skipped).
std::vector<uint32_t> Deps(std::initializer_list<std::optional<uint32_t>> deps);

// Appends a Compute op for block (q_shard, kv_shard) over the given query heads when the block
// has unmasked pairs; returns its index, or nullopt when the block is empty (skipped).
std::optional<uint32_t> EmitCompute(RankProgram& prog, const PlanContext& ctx,
                                    const ShardLayout& layout, Phase phase, int64_t q_shard,
                                    int64_t kv_shard, int64_t head_begin, int64_t head_count,
                                    int64_t step, const std::vector<uint32_t>& deps);

// Appends a collective on `group` (stream kCollective); nullopt when the group has one member
// (nothing moves, so nothing is emitted). Every member must call it in the same order.
std::optional<uint32_t> EmitCollective(RankProgram& prog, const Schedule& schedule, OpKind kind,
                                       Phase phase, int32_t group, uint16_t tensors, int64_t bytes,
                                       const std::vector<uint32_t>& deps,
                                       A2ADirection dir = A2ADirection::kSeqToHeads);

// Index of the last op on `stream`, if any (used to make a collective wait for the computes).
std::optional<uint32_t> LastOnStream(const RankProgram& prog, StreamId stream);

// Common checks: the rank grid `dims` (the scheme's RankDims(params)) has ctx.num_ranks ranks,
// the layout suits the mask, and the Ulysses degree u divides the KV heads (and so the query
// heads).
Status CheckGrid(const PlanContext& ctx, const SchemeParams& params,
                 const std::vector<RankDim>& dims, const ShardLayout& layout, int64_t ulysses);

// A schedule with num_ranks empty programs and the given layout; `ops_per_rank` ops are reserved
// in each up front unless ctx.rank_done takes the programs as they complete (then each grows as
// it is built, so that the programs handed over never all exist at once).
Schedule NewSchedule(const PlanContext& ctx, const SchemeParams& params, const ShardLayout& layout,
                     size_t ops_per_rank);

// Hands rank `rank`'s complete program to ctx.rank_done, when set, which may replace it (the
// simulator keeps only its timing view): every scheme calls it as it finishes each rank, so that
// an expansion never holds every rank's full program at once (PlanContext::rank_done).
// Returns false when the hook asks to stop: the expansion then returns ExpansionStopped().
bool HandOver(const PlanContext& ctx, int64_t rank, RankProgram& program);
Status ExpansionStopped();

}  // namespace meshplan::planner::sched
