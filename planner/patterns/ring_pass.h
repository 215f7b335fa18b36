// The ring pass, a pattern several schemes share (Ring, the head-parallel ring family, ...): n
// steps of one block each, the KV shard for step k+1 moving while step k computes, and in the
// backward the owner-last dK+dV chain one step behind. Its estimate and the ops it emits live
// side by side here, so the model and the schedule of the pattern cannot fork
// (docs/schemes.md for the bytes, docs/schedules.md for the ops).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/plan/schedule.h"
#include "planner/comm_model.h"
#include "planner/context.h"
#include "planner/estimate.h"
#include "planner/schedule_builder.h"

namespace meshplan::planner {

// Bytes of the partials one ring step writes out of its kernel and merges into the running ones:
// forward O and LSE, backward dQ, dK and dV of the step's block. The same for every ring of the
// head-parallel family: a position holds S/R tokens of Hq/U heads, S/P tokens of Hq heads
// (ShardBytes). Blocks with pairs after the first of a pass charge RingStepPartialSeconds of
// them (core/cost/kernel_time.h); EmitRingPass puts them on those blocks' compute ops (Op::bytes).
double RingStepPartialBytes(const PlanContext& ctx, Phase phase);

// Whether a ring pass over `layout` in `phase` holds blocks whose causal diagonal is strict (the
// block's first query row sees none of its keys): the forward of a causal striped ring, where a
// shard meets every later shard's keys. Every step after the first then has a rank holding one
// (position 0 holds a later shard from step 1 on).
bool SlicedRingSteps(const PlanContext& ctx, const ShardLayout& layout, Phase phase);
// Whether block (q_shard, kv_shard) of such a pass is one (a later striped shard's keys).
bool StrictDiagonalBlock(const PlanContext& ctx, const ShardLayout& layout, Phase phase,
                         int64_t q_shard, int64_t kv_shard);

// Seconds of one block of a ring pass over the shards of `layout` (R = layout.num_shards steps,
// R = 1 for a whole sequence): the busiest rank's forward kernel work on its pairs
// (PlanContext::RowPairsFor) at `heads` query heads, spread evenly over the R steps. The block
// time RingStepSeconds and RingPass take as block_s and step_compute_s.
double RingBlockSeconds(const PlanContext& ctx, const ShardLayout& layout, int64_t heads);

// Per-block compute of a rank's `blocks` blocks in `phase` over `layout` (a ring: a = 1 and
// blocks = its steps = layout.num_shards; a tile: a x b blocks) whose kernels take `block_s` each
// on the busiest rank: the block and, on average over the blocks, the merges of the partials of
// the blocks that find their Q accumulator holding one already (TileMergedBlocks; blocks without
// pairs are not computed and merge nothing):
// block_s + (RingStepPartialSeconds + [sliced_steps] SlicedMergeSeconds) * M / blocks, M the
// merges of the rank whose kernels and merges take longest (PlanContext::BusiestRankMerges).
// `sliced_steps` (SlicedRingSteps): every step after the first has a rank whose block's diagonal
// is strict, and the step lasts as long as that rank's merge through a slice.
double RingStepSeconds(const PlanContext& ctx, Phase phase, double block_s,
                       const ShardLayout& layout, int64_t a, int64_t blocks,
                       bool sliced_steps = false);

// Per-step share of the backward's dK,dV chain merges on the compute stream: a ring of `steps`
// positions merges the incoming dK+dV partial (PartialMergeSeconds) after every step but its
// first, so steps - 1 merges spread over the steps (0 forward, or with one step).
double ChainMergeSecondsPerStep(const PlanContext& ctx, Phase phase, int64_t steps);

// One ring pass over `dim` (size R) of the shards of `layout`: R steps of `step_compute_s` (the
// forward block's time; the backward's from it by `shape`, ctx.BackwardSeconds), KV shifts
// overlapped; the backward adds the dK+dV owner-last chain (and no KV shifts with cache).
// With cache and own_shard_last the backward runs the own shard last
// (sched::RingPass::own_shard_last), so the chain's last hop overlaps it instead of following the
// last block.
double RingPass(Estimate& e, const PlanContext& ctx, const Placement& placement,
                const ShardLayout& layout, int dim, Phase phase, bool cache, bool own_shard_last,
                double step_compute_s, KernelShape shape, Traffic& traffic);

}  // namespace meshplan::planner

namespace meshplan::planner::sched {

// One pass of a ring of n positions as seen by the rank at position `pos`. Position p holds KV
// shard kv_shard_of[(p + k) mod n] at step k: KV moves p -> p-1 (position p receives from p+1).
//   move_kv:   step k < n-1 receives the next buffer and forwards the current one (the shift
//              for step k+1 overlaps step k); otherwise every shard is already present (cache).
//   dkv_chain: backward owner-last chain: the dK+dV partial of the shard held at step k >= 1
//              goes to p-1 after the compute (merged with the partial from p+1 for k >= 2);
//              the last hop ends at the shard's step-0 holder, which merges it into its own.
//   own_shard_last (needs !move_kv and dkv_chain: every shard is present, e.g. cached from the
//              forward): the blocks run in chain order instead, the shards held at k = 1..n-1 at
//              steps 0..n-2 and the step-0 shard last, at step n-1. Each partial leaves right
//              after its block, so every hop, the last one included, overlaps the next block
//              (the Mesh greedy's just-in-time order, docs/mesh-attention.md section 3).
struct RingPass {
  Phase phase = Phase::kForward;
  int64_t n = 1;
  int64_t pos = 0;
  std::vector<int32_t> rank_of;      // global rank of each position
  std::vector<int64_t> kv_shard_of;  // KV shard held by each position at step 0
  int64_t q_shard = 0;
  int64_t head_begin = 0, head_count = 0;
  bool move_kv = true;
  bool dkv_chain = false;
  bool own_shard_last = false;
  int64_t step_offset = 0;  // step of k = 0 (Op::step, tags)
  Channel kv_channel = kChanKv, dkv_channel = kChanDkv;
  StreamId send_stream = StreamId::kSend, recv_stream = StreamId::kRecv;
  int64_t kv_bytes = 0, dkv_bytes = 0;
  // The Q accumulator already holds a block of this phase (an earlier round of a double ring):
  // every block of this pass merges its partials (MarkStepPartials in ring_pass.cc).
  bool accumulator_started = false;
  std::optional<uint32_t> q_dep;         // every compute waits for it (Q arrival)
  std::optional<uint32_t> kv_start_dep;  // the step-0 KV buffer arrives with it
};
struct RingPassResult {
  // Last op that touches the partial dK+dV of the step-0 shard (its chain's final merge, or the
  // step-0 compute); nullopt when neither exists.
  std::optional<uint32_t> own_dkv_ready;
  // The Q accumulator holds a block after the pass (RingPass::accumulator_started for the next).
  bool accumulator_started = false;
};
RingPassResult EmitRingPass(RankProgram& prog, const PlanContext& ctx, const ShardLayout& layout,
                            const RingPass& pass);

}  // namespace meshplan::planner::sched
