#include "planner/schedules/common.h"

#include <cmath>

#include "planner/ulysses_payload.h"

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
  const int64_t pairs = layout.BlockPairs(ctx.counter, q_shard, kv_shard);
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

RingPassResult EmitRingPass(RankProgram& prog, const PlanContext& ctx, const ShardLayout& layout,
                            const RingPass& p) {
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
  for (const RankDim& d : params.RankDims()) {
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

namespace meshplan::planner::sched {
namespace {

struct HeadRingRank {
  int64_t u = 1, r = 1, w = 1, num_windows = 1;  // sizes
  int64_t h = 0, rho = 0, i = 0, o = 0;          // this rank's coordinates
  int32_t RankAt(int64_t inner, int64_t window) const {
    return static_cast<int32_t>(h + u * (inner + w * window));
  }
  int64_t Shard(int64_t inner, int64_t window) const { return inner + w * (window % num_windows); }
};

Op OuterMessage(OpKind kind, Phase phase, uint16_t tensors, int32_t peer, int64_t shard,
                int64_t step, Channel channel, int64_t tag_step, int64_t bytes) {
  Op op;
  op.kind = kind;
  op.phase = phase;
  op.stream = StreamId::kCollective;  // the outer ring has its own communicator (LoongTrain)
  op.tensors = tensors;
  op.peer = peer;
  op.kv_shard = static_cast<int32_t>(shard);
  op.step = static_cast<int32_t>(step);
  op.tag = MakeTag(phase, channel, tag_step);
  op.bytes = bytes;
  return op;
}

// Round t: the window holds round-start KV of window o+t, rotates it w-1 times (inner ring) while
// the round-start buffer of round t+1 arrives over the outer ring. Backward: every round's inner
// chain reduces the window's dK+dV partial of shard (i, o+t) at inner position i; the outer chain
// carries it window o+t -> o+t-1 -> ... -> the owner's window o+t-(W-1) (owner-last, W-1 hops).
void EmitDoubleRing(RankProgram& prog, const PlanContext& ctx, const ShardLayout& layout,
                    const HeadRingRank& c, Phase phase, bool move_kv, bool dkv_chain,
                    std::optional<uint32_t> q_dep) {
  const int64_t nw = c.num_windows;
  const int32_t outer_to = c.RankAt(c.i, (c.o + nw - 1) % nw);
  const int32_t outer_from = c.RankAt(c.i, (c.o + 1) % nw);
  const int64_t kv_bytes = WholeBytes(ctx.shard.kv), dkv_bytes = WholeBytes(ctx.shard.dkv_partial);
  RingPass pass;
  pass.phase = phase;
  pass.n = c.w;
  pass.pos = c.i;
  pass.rank_of.resize(static_cast<size_t>(c.w));
  for (int64_t p = 0; p < c.w; ++p) pass.rank_of[p] = c.RankAt(p, c.o);
  pass.kv_shard_of.resize(static_cast<size_t>(c.w));
  pass.q_shard = c.rho;
  pass.head_count = ctx.workload.q_heads / c.u;
  pass.head_begin = c.h * pass.head_count;
  pass.move_kv = move_kv;
  pass.dkv_chain = dkv_chain;
  pass.kv_bytes = kv_bytes;
  pass.dkv_bytes = dkv_bytes;
  pass.q_dep = q_dep;

  std::optional<uint32_t> round_start = q_dep;  // op delivering the round's start buffer
  std::optional<uint32_t> own_partial;          // window-reduced partial of the own shard
  for (int64_t t = 0; t < nw; ++t) {
    const int64_t step0 = t * c.w;
    // All outer traffic shares one FIFO stream, so the send of the round goes first (a recv
    // ahead of it would wait for a neighbour that waits for this send). Messages (i, o+1) ->
    // (i, o) go KV(0), KV(1), dKV(1), KV(2), dKV(2), ...: the outer dK+dV partial sent at the end
    // of round t-1 is received before this round's outer KV shift.
    const int64_t shard = c.Shard(c.i, c.o + t), last = step0 + c.w - 1;
    if (move_kv && t + 1 < nw) {
      prog.Add(OuterMessage(OpKind::kSend, phase, kTensorKV, outer_to, shard, step0, kChanOuterKv,
                            t, kv_bytes),
               Deps({round_start}));
    }
    std::optional<uint32_t> outer_dkv_recv;
    if (dkv_chain && t >= 2) {
      outer_dkv_recv = prog.Add(OuterMessage(OpKind::kRecv, phase, kTensorDKV, outer_from, shard,
                                             last - c.w, kChanOuterDkv, t - 1, dkv_bytes));
    }
    std::optional<uint32_t> next_start;
    if (move_kv && t + 1 < nw) {
      next_start =
          prog.Add(OuterMessage(OpKind::kRecv, phase, kTensorKV, outer_from,
                                c.Shard(c.i, c.o + t + 1), step0, kChanOuterKv, t, kv_bytes));
    }
    for (int64_t p = 0; p < c.w; ++p) pass.kv_shard_of[p] = c.Shard(p, c.o + t);
    pass.step_offset = step0;
    pass.kv_start_dep = move_kv ? round_start : q_dep;
    const RingPassResult res = EmitRingPass(prog, ctx, layout, pass);
    if (dkv_chain && nw >= 2) {
      if (t == 0) {
        own_partial = res.own_dkv_ready;
      } else {
        std::optional<uint32_t> ready = res.own_dkv_ready;
        if (outer_dkv_recv) {  // the chain of this shard passed window o+1 in the previous round
          Op merge =
              OuterMessage(OpKind::kMerge, phase, kTensorDKV, -1, shard, last, kChanOuterDkv, 0, 0);
          merge.stream = StreamId::kCompute;
          merge.tag = 0;
          ready = prog.Add(merge, Deps({outer_dkv_recv, ready}));
        }
        prog.Add(OuterMessage(OpKind::kSend, phase, kTensorDKV, outer_to, shard, last,
                              kChanOuterDkv, t, dkv_bytes),
                 Deps({ready}));
      }
    }
    if (move_kv) round_start = next_start;
  }
  if (dkv_chain && nw >= 2) {  // last outer hop brings the total of the own shard home
    const int64_t last = nw * c.w - 1;
    const uint32_t recv =
        prog.Add(OuterMessage(OpKind::kRecv, phase, kTensorDKV, outer_from, c.Shard(c.i, c.o), last,
                              kChanOuterDkv, nw - 1, dkv_bytes));
    Op merge = OuterMessage(OpKind::kMerge, phase, kTensorDKV, -1, c.Shard(c.i, c.o), last + 1,
                            kChanOuterDkv, 0, 0);
    merge.stream = StreamId::kCompute;
    merge.tag = 0;
    prog.Add(merge, Deps({recv, own_partial}));
  }
}

}  // namespace

Schedule ExpandHeadRing(const PlanContext& ctx, const SchemeParams& params,
                        const ShardLayout& layout, int64_t u, int64_t r, int64_t w) {
  const Workload& wl = ctx.workload;
  const ShardBytes& b = ctx.shard;
  // All-to-all over u ranks of x bytes per rank sends (u-1)/u*x (docs/schemes.md, Ulysses row).
  const A2APayload fwd_in_payload = UlyssesInPayload(b, Phase::kForward, false);
  const A2APayload bwd_in_payload = UlyssesInPayload(b, Phase::kBackward, params.cache_forward);
  const int64_t fwd_in = WholeBytes(AllToAllSent(fwd_in_payload.bytes, u));
  const int64_t fwd_out = WholeBytes(AllToAllSent(UlyssesOutPayload(b, Phase::kForward).bytes, u));
  const int64_t bwd_in = WholeBytes(AllToAllSent(bwd_in_payload.bytes, u));
  const uint16_t bwd_in_tensors = bwd_in_payload.tensors;
  const int64_t bwd_out = WholeBytes(AllToAllSent(UlyssesOutPayload(b, Phase::kBackward).bytes, u));

  Schedule s = NewSchedule(ctx, params, layout, static_cast<size_t>(16 * r + 8));
  s.groups.resize(static_cast<size_t>(r));
  for (int64_t rho = 0; rho < r; ++rho) {
    for (int64_t h = 0; h < u; ++h) s.groups[rho].push_back(static_cast<int32_t>(h + u * rho));
  }
  for (int64_t g = 0; g < ctx.num_ranks; ++g) {
    HeadRingRank c;
    c.u = u, c.r = r, c.w = w, c.num_windows = r / w;
    c.h = g % u, c.rho = g / u, c.i = c.rho % w, c.o = c.rho / w;
    RankProgram& prog = s.ranks[g];
    const int32_t group = static_cast<int32_t>(c.rho);
    if (HasForward(wl.pass)) {
      auto in = EmitCollective(prog, s, OpKind::kAllToAll, Phase::kForward, group,
                               kTensorQ | kTensorKV, fwd_in, {}, A2ADirection::kSeqToHeads);
      EmitDoubleRing(prog, ctx, layout, c, Phase::kForward, /*move_kv=*/true, /*dkv_chain=*/false,
                     in);
      EmitCollective(prog, s, OpKind::kAllToAll, Phase::kForward, group, kTensorO, fwd_out,
                     Deps({LastOnStream(prog, StreamId::kCompute)}), A2ADirection::kHeadsToSeq);
    }
    if (HasBackward(wl.pass)) {
      auto in = EmitCollective(prog, s, OpKind::kAllToAll, Phase::kBackward, group, bwd_in_tensors,
                               bwd_in, {}, A2ADirection::kSeqToHeads);
      EmitDoubleRing(prog, ctx, layout, c, Phase::kBackward, !params.cache_forward,
                     /*dkv_chain=*/true, in);
      EmitCollective(prog, s, OpKind::kAllToAll, Phase::kBackward, group, kTensorDQ | kTensorDKV,
                     bwd_out, Deps({LastOnStream(prog, StreamId::kCompute)}),
                     A2ADirection::kHeadsToSeq);
    }
  }
  return s;
}

}  // namespace meshplan::planner::sched
