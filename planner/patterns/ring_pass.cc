#include "planner/patterns/ring_pass.h"

#include <algorithm>
#include <string>

#include "core/cost/kernel_time.h"

namespace meshplan::planner {

namespace {

// A pipelined loop of `steps` steps where step s+1's transfer overlaps step s's compute:
// one compute-only step, then steps-1 overlapped steps.
void AddPipeline(Estimate& e, const std::string& label, int64_t steps, double step_compute_s,
                 double step_comm_s) {
  if (steps <= 0) return;
  e.stages.push_back({label + " (first step)", step_compute_s, 0.0, true, 1});
  if (steps > 1) e.stages.push_back({label, step_compute_s, step_comm_s, true, steps - 1});
}

}  // namespace

double RingStepPartialBytes(const PlanContext& ctx, Phase phase) {
  const ShardBytes& s = ctx.shard;
  return phase == Phase::kForward ? s.o_partial + s.lse : s.dq_partial + s.dkv_partial;
}

bool SlicedRingSteps(const PlanContext& ctx, const ShardLayout& layout, Phase phase) {
  return phase == Phase::kForward && layout.kind == Layout::kStriped && layout.num_shards > 1 &&
         ctx.workload.mask.kind == MaskKind::kCausal;
}

bool StrictDiagonalBlock(const PlanContext& ctx, const ShardLayout& layout, Phase phase,
                         int64_t q_shard, int64_t kv_shard) {
  // Striped shard i holds tokens i, i + n, i + 2n, ...: query j n + q sees key m n + k (k > q)
  // iff m n + k <= j n + q, iff m < j; row j = 0 sees none.
  return SlicedRingSteps(ctx, layout, phase) && kv_shard > q_shard;
}

double RingBlockSeconds(const PlanContext& ctx, const ShardLayout& layout, int64_t heads) {
  const Workload& w = ctx.workload;
  const double flops = ctx.KernelForwardFlopsMax(ctx.RowPairsFor(layout), layout, 1, heads) /
                       static_cast<double>(layout.num_shards);
  return KernelSeconds(ctx.topology.gpu, w.dtype, w.head_dim, flops, ctx.ShapeOf(layout, heads), 1);
}

double RingStepSeconds(const PlanContext& ctx, Phase phase, double block_s,
                       const ShardLayout& layout, int64_t a, int64_t blocks, bool sliced_steps) {
  if (blocks <= 1) return block_s;
  const GpuSpec& gpu = ctx.topology.gpu;
  const double bytes = RingStepPartialBytes(ctx, phase);
  const double merge_s =
      (RingStepPartialSeconds(gpu, bytes) + (sliced_steps ? SlicedMergeSeconds(gpu, bytes) : 0.0)) *
      gpu.SharedComputeSlowdown();
  if (!(merge_s > 0)) return block_s;
  // The busiest rank's kernels over its blocks, launches left out (they do not scale with work).
  const double launch_s = gpu.launch_overhead_s * gpu.SharedComputeSlowdown();
  const double kernel_s = std::max(0.0, block_s - launch_s) * static_cast<double>(blocks);
  const double merges = ctx.BusiestRankMerges(layout, a, kernel_s, merge_s);
  return block_s + merge_s * merges / static_cast<double>(blocks);
}

double ChainMergeSecondsPerStep(const PlanContext& ctx, Phase phase, int64_t steps) {
  if (phase == Phase::kForward || steps <= 1) return 0.0;
  const GpuSpec& gpu = ctx.topology.gpu;
  return PartialMergeSeconds(gpu, ctx.shard.dkv_partial) * gpu.SharedComputeSlowdown() *
         static_cast<double>(steps - 1) / static_cast<double>(steps);
}

double RingPass(Estimate& e, const PlanContext& ctx, const Placement& placement,
                const ShardLayout& layout, int dim, Phase phase, bool cache, bool own_shard_last,
                double step_compute_s, KernelShape shape, Traffic& traffic) {
  const int64_t r = placement.DimSize(dim);
  const ShardBytes& s = ctx.shard;
  if (phase == Phase::kForward) {
    const double t_kv = ctx.comm->RingShift(placement, dim, s.kv, r - 1, &traffic);
    AddPipeline(e, "fwd ring step (KV shift)", r,
                RingStepSeconds(ctx, phase, step_compute_s, layout, 1, r,
                                SlicedRingSteps(ctx, layout, phase)),
                t_kv);
    return static_cast<double>(r - 1) * s.kv;
  }
  const double t_kv = cache ? 0.0 : ctx.comm->RingShift(placement, dim, s.kv, r - 1, &traffic);
  const double t_dkv = ctx.comm->RingShift(placement, dim, s.dkv_partial, r - 1, &traffic);
  // The dK,dV chain runs one step behind the KV ring; its last hop follows the last block,
  // unless the own shard runs last (cache only): then hop k overlaps block k+1 and the last hop
  // the own block.
  AddPipeline(
      e, cache ? "bwd ring step (dK,dV hop)" : "bwd ring step (KV shift + dK,dV hop)", r,
      RingStepSeconds(ctx, phase, ctx.BackwardSeconds(step_compute_s, 1, shape), layout, 1, r) +
          ChainMergeSecondsPerStep(ctx, phase, r),
      t_kv + t_dkv);
  if (!(cache && own_shard_last)) AddExposed(e, "bwd last dK,dV hop", r > 1 ? t_dkv : 0.0);
  return static_cast<double>(r - 1) * ((cache ? 0.0 : s.kv) + s.dkv_partial);
}

}  // namespace meshplan::planner

namespace meshplan::planner::sched {

namespace {

Op Message(OpKind kind, Phase phase, StreamId stream, uint16_t tensors, int32_t peer,
           int64_t kv_shard, int64_t step, int32_t tag, int64_t bytes) {
  Op op;
  op.kind = kind;
  op.phase = phase;
  op.stream = stream;
  op.tensors = tensors;
  op.peer = peer;
  op.kv_shard = static_cast<int32_t>(kv_shard);
  op.step = static_cast<int32_t>(step);
  op.tag = tag;
  op.bytes = bytes;
  return op;
}

}  // namespace

namespace {

// A block computed into a Q accumulator that already holds one (`started`) merges its partials:
// its compute op carries their bytes (RingStepPartialBytes), and as sliced_bytes too when the
// block's causal diagonal is strict (StrictDiagonalBlock). Blocks without pairs are skipped, so
// the first block of a pass need not be step 0's.
void MarkStepPartials(RankProgram& prog, const PlanContext& ctx, const ShardLayout& layout,
                      Phase phase, bool& started, std::optional<uint32_t> compute) {
  if (!compute) return;
  if (started) {
    Op& op = prog.ops[*compute];
    op.bytes = WholeBytes(RingStepPartialBytes(ctx, phase));
    if (StrictDiagonalBlock(ctx, layout, phase, op.q_shard, op.kv_shard))
      op.sliced_bytes = op.bytes;
  }
  started = true;
}

// RingPass::own_shard_last: the shard held at k >= 1 is computed at step k-1 and its partial
// leaves right after (merged with the partial p+1 sent at step k-2 for k >= 2); the step-0
// shard runs last and takes the total p+1 sent at step n-2. Messages p+1 -> p are the dK+dV
// partials of steps 0..n-2, in that order.
RingPassResult EmitOwnShardLast(RankProgram& prog, const PlanContext& ctx,
                                const ShardLayout& layout, const RingPass& p) {
  RingPassResult result;
  bool started = p.accumulator_started;
  const int64_t n = p.n;
  const int32_t next = p.rank_of[(p.pos + 1) % n];      // receive from
  const int32_t prev = p.rank_of[(p.pos + n - 1) % n];  // send to
  auto shard_at = [&](int64_t k) { return p.kv_shard_of[(p.pos + k) % n]; };
  const std::vector<uint32_t> compute_deps = Deps({p.q_dep, p.kv_start_dep});
  for (int64_t k = 1; k < n; ++k) {
    const int64_t step = p.step_offset + k - 1;
    const int64_t shard = shard_at(k);
    std::optional<uint32_t> dkv_recv;
    if (k >= 2) {
      dkv_recv =
          prog.Add(Message(OpKind::kRecv, p.phase, p.recv_stream, kTensorDKV, next, shard, step - 1,
                           MakeTag(p.phase, p.dkv_channel, step - 1), p.dkv_bytes));
    }
    std::optional<uint32_t> ready = EmitCompute(prog, ctx, layout, p.phase, p.q_shard, shard,
                                                p.head_begin, p.head_count, step, compute_deps);
    MarkStepPartials(prog, ctx, layout, p.phase, started, ready);
    if (dkv_recv) {
      Op merge =
          Message(OpKind::kMerge, p.phase, StreamId::kCompute, kTensorDKV, -1, shard, step, 0, 0);
      ready = prog.Add(merge, Deps({dkv_recv, ready}));
    }
    prog.Add(Message(OpKind::kSend, p.phase, p.send_stream, kTensorDKV, prev, shard, step,
                     MakeTag(p.phase, p.dkv_channel, step), p.dkv_bytes),
             Deps({ready}));
  }
  const int64_t last = p.step_offset + n - 1;
  std::optional<uint32_t> recv;
  if (n >= 2) {
    recv = prog.Add(Message(OpKind::kRecv, p.phase, p.recv_stream, kTensorDKV, next, shard_at(0),
                            last - 1, MakeTag(p.phase, p.dkv_channel, last - 1), p.dkv_bytes));
  }
  result.own_dkv_ready = EmitCompute(prog, ctx, layout, p.phase, p.q_shard, shard_at(0),
                                     p.head_begin, p.head_count, last, compute_deps);
  MarkStepPartials(prog, ctx, layout, p.phase, started, result.own_dkv_ready);
  result.accumulator_started = started;
  if (recv) {
    Op merge = Message(OpKind::kMerge, p.phase, StreamId::kCompute, kTensorDKV, -1, shard_at(0),
                       last, 0, 0);
    result.own_dkv_ready = prog.Add(merge, Deps({recv, result.own_dkv_ready}));
  }
  return result;
}

}  // namespace

RingPassResult EmitRingPass(RankProgram& prog, const PlanContext& ctx, const ShardLayout& layout,
                            const RingPass& p) {
  if (p.own_shard_last && !p.move_kv && p.dkv_chain) return EmitOwnShardLast(prog, ctx, layout, p);
  RingPassResult result;
  bool started = p.accumulator_started;
  const int64_t n = p.n;
  const int32_t next = p.rank_of[(p.pos + 1) % n];      // receive from
  const int32_t prev = p.rank_of[(p.pos + n - 1) % n];  // send to
  auto shard_at = [&](int64_t k) { return p.kv_shard_of[(p.pos + k) % n]; };
  std::optional<uint32_t> kv_buffer = p.kv_start_dep;  // op delivering the buffer held at step k
  for (int64_t k = 0; k < n; ++k) {
    const int64_t step = p.step_offset + k;
    const int64_t shard = shard_at(k);
    // Messages p+1 -> p go KV(0), KV(1), dKV(1), KV(2), dKV(2), ...: the dK+dV partial that
    // p+1 sent after its step k-1 is posted before the KV shift of step k.
    std::optional<uint32_t> dkv_recv;
    if (p.dkv_chain && k >= 2) {
      dkv_recv =
          prog.Add(Message(OpKind::kRecv, p.phase, p.recv_stream, kTensorDKV, next, shard, step - 1,
                           MakeTag(p.phase, p.dkv_channel, step - 1), p.dkv_bytes));
    }
    std::optional<uint32_t> kv_recv;
    if (p.move_kv && k + 1 < n) {
      kv_recv =
          prog.Add(Message(OpKind::kRecv, p.phase, p.recv_stream, kTensorKV, next, shard_at(k + 1),
                           step, MakeTag(p.phase, p.kv_channel, step), p.kv_bytes));
      prog.Add(Message(OpKind::kSend, p.phase, p.send_stream, kTensorKV, prev, shard, step,
                       MakeTag(p.phase, p.kv_channel, step), p.kv_bytes),
               Deps({kv_buffer}));
    }
    const auto compute = EmitCompute(prog, ctx, layout, p.phase, p.q_shard, shard, p.head_begin,
                                     p.head_count, step, Deps({p.q_dep, kv_buffer}));
    MarkStepPartials(prog, ctx, layout, p.phase, started, compute);
    if (k == 0) result.own_dkv_ready = compute;
    if (p.dkv_chain && k >= 1) {
      std::optional<uint32_t> ready = compute;
      if (dkv_recv) {  // the chain of this shard started at p+1 one step earlier
        Op merge =
            Message(OpKind::kMerge, p.phase, StreamId::kCompute, kTensorDKV, -1, shard, step, 0, 0);
        ready = prog.Add(merge, Deps({dkv_recv, compute}));
      }
      prog.Add(Message(OpKind::kSend, p.phase, p.send_stream, kTensorDKV, prev, shard, step,
                       MakeTag(p.phase, p.dkv_channel, step), p.dkv_bytes),
               Deps({ready}));
    }
    if (p.move_kv) kv_buffer = kv_recv;
  }
  if (p.dkv_chain && n >= 2) {  // last hop: p+1 sends the total of our step-0 shard at its step n-1
    const int64_t step = p.step_offset + n - 1;
    const uint32_t recv =
        prog.Add(Message(OpKind::kRecv, p.phase, p.recv_stream, kTensorDKV, next, shard_at(0), step,
                         MakeTag(p.phase, p.dkv_channel, step), p.dkv_bytes));
    Op merge = Message(OpKind::kMerge, p.phase, StreamId::kCompute, kTensorDKV, -1, shard_at(0),
                       step + 1, 0, 0);
    result.own_dkv_ready = prog.Add(merge, Deps({recv, result.own_dkv_ready}));
  }
  result.accumulator_started = started;
  return result;
}

}  // namespace meshplan::planner::sched
