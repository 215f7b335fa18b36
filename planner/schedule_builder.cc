#include "planner/schedule_builder.h"

#include <cmath>

#include "planner/ulysses_payload.h"
#include "planner/schemes/registry.h"

namespace meshplan::planner::sched {

int64_t WholeBytes(double bytes) { return std::llround(bytes); }

int64_t ScaledBytes(double bytes, int64_t num, int64_t den) {
  // bytes is an integer below 2^53 and divisible by den in every use; round the exact quotient.
  return std::llround(bytes * static_cast<double>(num) / static_cast<double>(den));
}

std::vector<uint32_t> Deps(std::initializer_list<std::optional<uint32_t>> deps) {
  std::vector<uint32_t> out;
  out.reserve(deps.size());
  for (const auto& d : deps) {
    if (d) out.push_back(*d);
  }
  return out;
}

std::optional<uint32_t> EmitCompute(RankProgram& prog, const PlanContext& ctx,
                                    const ShardLayout& layout, Phase phase, int64_t q_shard,
                                    int64_t kv_shard, int64_t head_begin, int64_t head_count,
                                    int64_t step, const std::vector<uint32_t>& deps) {
  const BlockWork work = layout.Work(ctx.counter, q_shard, kv_shard);
  const int64_t pairs = work.pairs;
  if (pairs == 0) return std::nullopt;
  Op op;
  op.kind = OpKind::kCompute;
  op.phase = phase;
  op.stream = StreamId::kCompute;
  op.q_shard = static_cast<int32_t>(q_shard);
  op.kv_shard = static_cast<int32_t>(kv_shard);
  op.head_begin = static_cast<int32_t>(head_begin);
  op.head_count = static_cast<int32_t>(head_count);
  op.step = static_cast<int32_t>(step);
  op.flops = ctx.ForwardFlops(pairs, head_count) *
             (phase == Phase::kBackward ? kBackwardFlopsFactor : 1.0);
  op.cut_rows_per_pair = static_cast<float>(work.CutRowsPerPair());
  return prog.Add(op, deps);
}

std::optional<uint32_t> EmitCollective(RankProgram& prog, const Schedule& schedule, OpKind kind,
                                       Phase phase, int32_t group, uint16_t tensors, int64_t bytes,
                                       const std::vector<uint32_t>& deps, A2ADirection dir) {
  if (schedule.groups[group].size() <= 1) return std::nullopt;
  Op op;
  op.kind = kind;
  op.phase = phase;
  op.stream = StreamId::kCollective;
  op.a2a = dir;
  op.tensors = tensors;
  op.group = group;
  op.bytes = bytes;
  return prog.Add(op, deps);
}

std::optional<uint32_t> LastOnStream(const RankProgram& prog, StreamId stream) {
  for (size_t i = prog.ops.size(); i-- > 0;) {
    if (prog.ops[i].stream == stream) return static_cast<uint32_t>(i);
  }
  return std::nullopt;
}

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

// RingPass::own_shard_last: the shard held at k >= 1 is computed at step k-1 and its partial
// leaves right after (merged with the partial p+1 sent at step k-2 for k >= 2); the step-0
// shard runs last and takes the total p+1 sent at step n-2. Messages p+1 -> p are the dK+dV
// partials of steps 0..n-2, in that order.
RingPassResult EmitOwnShardLast(RankProgram& prog, const PlanContext& ctx, const ShardLayout& layout,
                                const RingPass& p) {
  RingPassResult result;
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
      dkv_recv = prog.Add(Message(OpKind::kRecv, p.phase, p.recv_stream, kTensorDKV, next, shard, step - 1,
                                  MakeTag(p.phase, p.dkv_channel, step - 1), p.dkv_bytes));
    }
    std::optional<uint32_t> ready =
        EmitCompute(prog, ctx, layout, p.phase, p.q_shard, shard, p.head_begin, p.head_count, step, compute_deps);
    if (dkv_recv) {
      Op merge = Message(OpKind::kMerge, p.phase, StreamId::kCompute, kTensorDKV, -1, shard, step, 0, 0);
      ready = prog.Add(merge, Deps({dkv_recv, ready}));
    }
    prog.Add(Message(OpKind::kSend, p.phase, p.send_stream, kTensorDKV, prev, shard, step,
                     MakeTag(p.phase, p.dkv_channel, step), p.dkv_bytes),
             Deps({ready}));
  }
  const int64_t last = p.step_offset + n - 1;
  std::optional<uint32_t> recv;
  if (n >= 2) {
    recv = prog.Add(Message(OpKind::kRecv, p.phase, p.recv_stream, kTensorDKV, next, shard_at(0), last - 1,
                            MakeTag(p.phase, p.dkv_channel, last - 1), p.dkv_bytes));
  }
  result.own_dkv_ready = EmitCompute(prog, ctx, layout, p.phase, p.q_shard, shard_at(0), p.head_begin,
                                     p.head_count, last, compute_deps);
  if (recv) {
    Op merge = Message(OpKind::kMerge, p.phase, StreamId::kCompute, kTensorDKV, -1, shard_at(0), last, 0, 0);
    result.own_dkv_ready = prog.Add(merge, Deps({recv, result.own_dkv_ready}));
  }
  return result;
}

}  // namespace

RingPassResult EmitRingPass(RankProgram& prog, const PlanContext& ctx, const ShardLayout& layout,
                            const RingPass& p) {
  if (p.own_shard_last && !p.move_kv && p.dkv_chain) return EmitOwnShardLast(prog, ctx, layout, p);
  RingPassResult result;
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
  return result;
}

Status CheckGrid(const PlanContext& ctx, const SchemeParams& params, const ShardLayout& layout,
                 int64_t ulysses) {
  int64_t ranks = 1;
  std::string dims;
  for (const RankDim& d : RankDims(params)) {
    if (d.size < 1) return Status::Invalid("rank dimension '" + d.name + "' must be at least 1");
    ranks *= d.size;
    dims += (dims.empty() ? "" : " x ") + d.name + "=" + std::to_string(d.size);
  }
  if (ranks != ctx.num_ranks) {
    return Status::Invalid(std::string(SchemeName(params.scheme)) + " rank grid " + dims + " has " +
                           std::to_string(ranks) + " ranks, but the cluster has " +
                           std::to_string(ctx.num_ranks) + " GPUs");
  }
  const Workload& w = ctx.workload;
  if (ulysses < 1 || w.kv_heads % ulysses != 0 || w.q_heads % ulysses != 0) {
    return Status::Invalid("Ulysses degree " + std::to_string(ulysses) + " does not divide the " +
                           std::to_string(w.kv_heads) + " KV heads and " +
                           std::to_string(w.q_heads) + " query heads");
  }
  return layout.Validate(w.mask);
}

Schedule NewSchedule(const PlanContext& ctx, const SchemeParams& params, const ShardLayout& layout,
                     size_t ops_per_rank) {
  Schedule s;
  s.scheme = params.scheme;
  s.num_ranks = ctx.num_ranks;
  s.layout = layout;
  s.ranks.resize(static_cast<size_t>(ctx.num_ranks));
  for (RankProgram& r : s.ranks) {
    r.ops.reserve(ops_per_rank);
    r.deps.reserve(2 * ops_per_rank);
  }
  return s;
}

}  // namespace meshplan::planner::sched
