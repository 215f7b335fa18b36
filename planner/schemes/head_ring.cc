#include "planner/schemes/head_ring.h"

#include "planner/patterns/all_to_all.h"
#include "planner/patterns/ring_pass.h"
#include "planner/schedule_builder.h"
#include "planner/schemes/common.h"

namespace meshplan::planner::schemes {

namespace {

// The double ring over dims inner (size w) and outer (size cp/w): each round computes w blocks
// while the inner ring rotates and the next round's KV arrives over the outer ring. Adds its
// stages and traffic to the estimate and returns the bytes one rank sends (the expansion below
// emits the same messages).
double DoubleRingPass(Estimate& e, const PlanContext& ctx, const Placement& placement,
                      const ShardLayout& layout, int inner_dim, int outer_dim, Phase phase,
                      bool cache, double step_compute_s, KernelShape shape, Traffic& traffic) {
  const int64_t w = placement.DimSize(inner_dim), windows = placement.DimSize(outer_dim);
  const ShardBytes& s = ctx.shard;
  const bool fwd = phase == Phase::kForward;
  const double msg = fwd ? s.kv : (cache ? 0.0 : s.kv) + s.dkv_partial;
  const double step_s =
      RingStepSeconds(ctx, phase,
                      fwd ? step_compute_s : ctx.BackwardSeconds(step_compute_s, 1, shape), layout,
                      1, w * windows, SlicedRingSteps(ctx, layout, phase)) +
      ChainMergeSecondsPerStep(ctx, phase, w * windows);
  const double t_in = ctx.comm->RingShift(placement, inner_dim, msg, (w - 1) * windows, &traffic);
  const double t_out = ctx.comm->RingShift(placement, outer_dim, msg, windows - 1, &traffic);
  const bool shared = ctx.comm->BottleneckLevel(placement, inner_dim, msg) ==
                      ctx.comm->BottleneckLevel(placement, outer_dim, msg);
  const double inner_total = static_cast<double>(w - 1) * t_in;
  // Each round computes w blocks while the inner ring rotates and the next round's KV arrives
  // over the outer ring; both rings share a link only when they route over the same level.
  const double round_comm = shared ? inner_total + t_out : std::max(inner_total, t_out);
  const std::string label = std::string(PhaseLabel(phase)) + " double-ring round";
  if (windows > 1) {
    e.stages.push_back({label + " (inner + outer)", step_s * w, round_comm, true, windows - 1});
  }
  e.stages.push_back({label + " (last, inner only)", step_s * w, inner_total, true, 1});
  if (!fwd && w * windows > 1) {
    // The dK+dV chains' hops that nothing overlaps: a round ends when the inner chain's last hop
    // has brought the window's partial to the round-start holder (InternEvo's window backward
    // waits for it, local_dkv_comm.wait(), before the next window starts; the expansion below
    // orders the next round's work after that merge alike), so every round exposes one inner
    // dK+dV hop; after the last round the outer hop brings the total home.
    const double dkv_in =
        w > 1 ? ctx.comm->RingShift(placement, inner_dim, s.dkv_partial, 1, nullptr) : 0.0;
    const double dkv_out =
        windows > 1 ? ctx.comm->RingShift(placement, outer_dim, s.dkv_partial, 1, nullptr) : 0.0;
    AddExposed(e, "bwd inner dK,dV hop closing each round", static_cast<double>(windows) * dkv_in);
    AddExposed(e, "bwd last (outer) dK,dV hop", dkv_out);
  }
  return static_cast<double>(w * windows - 1) * msg;
}

}  // namespace

Estimate HeadRingEstimate(const PlanContext& ctx, const SchemeParams& p,
                          const std::vector<RankDim>& dims, const ShardLayout& layout,
                          bool double_ring) {
  const Workload& w = ctx.workload;
  const ShardBytes& s = ctx.shard;
  const int64_t u = p.ulysses;
  const int64_t r = layout.num_shards;  // ring positions (1 for Ulysses)
  Estimate e = ValidEstimate(p);
  const Placement placement(dims, p.placement);
  SetFlops(e, ctx, ctx.RowPairsFor(layout), HeadsPerRank(w, u));
  const double step_s = RingBlockSeconds(ctx, layout, HeadsPerRank(w, u));
  const KernelShape shape = ctx.ShapeOf(layout, HeadsPerRank(w, u));
  Traffic traffic(ctx.num_ranks, ctx.topology.num_levels());
  auto ring = [&](Phase phase, bool cache) {
    if (double_ring)
      return DoubleRingPass(e, ctx, placement, layout, 1, 2, phase, cache, step_s, shape, traffic);
    if (r > 1)
      return RingPass(e, ctx, placement, layout, 1, phase, cache, /*own_shard_last=*/false, step_s,
                      shape, traffic);
    AddCompute(
        e, phase == Phase::kForward ? "fwd attention (full sequence, own heads)" : "bwd attention",
        phase == Phase::kForward ? step_s : ctx.BackwardSeconds(step_s, 1, shape));
    return 0.0;
  };
  double fwd_bytes = 0, bwd_bytes = 0;
  if (HasForward(w.pass)) {
    fwd_bytes += UlyssesIn(e, ctx, placement, 0, Phase::kForward, false, traffic);
    fwd_bytes += ring(Phase::kForward, false);
    fwd_bytes += UlyssesOut(e, ctx, placement, 0, Phase::kForward, traffic);
  }
  if (HasBackward(w.pass)) {
    bwd_bytes += UlyssesIn(e, ctx, placement, 0, Phase::kBackward, p.cache_forward, traffic);
    bwd_bytes += ring(Phase::kBackward, p.cache_forward);
    bwd_bytes += UlyssesOut(e, ctx, placement, 0, Phase::kBackward, traffic);
  }
  SetTraffic(e, traffic, fwd_bytes, bwd_bytes);
  // Head-layout copies (Q', K', V', O', fp32 accumulator; backward dO', D, partial dQ', dK', dV'
  // and the final copies before the all-to-all back), plus the ring's KV buffers in flight: two
  // for a ring, one more for a double ring's round-start shard (each with its dK,dV partial in
  // the backward). Cache keeps the head-layout tensors and the R-1 other KV shards.
  const double ring_buffers = (r > 1 ? 2.0 : 0.0) + (double_ring ? 1.0 : 0.0);
  SetMemory(e, ctx, 2 * s.q + s.kv + s.o_partial + s.lse + ring_buffers * s.kv,
            (p.cache_forward ? 0.0 : s.q + (1 + ring_buffers) * s.kv) + s.q + s.lse + s.dq_partial +
                (1 + ring_buffers) * s.dkv_partial + s.q + s.kv,
            2 * s.q + s.kv + s.lse + static_cast<double>(r - 1) * s.kv);
  FinishTime(e);
  return e;
}

namespace {

// The schedule building blocks (planner/schedule_builder.h) this file's expansion uses.
using sched::Channel;
using sched::Deps;
using sched::EmitCollective;
using sched::EmitRingPass;
using sched::kChanOuterDkv;
using sched::kChanOuterKv;
using sched::LastOnStream;
using sched::MakeTag;
using sched::NewSchedule;
using sched::WholeBytes;

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
  op.stream = StreamId::kCollective;  // the outer ring has its own communicator
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
  sched::RingPass pass;
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
    const sched::RingPassResult res = EmitRingPass(prog, ctx, layout, pass);
    pass.accumulator_started = res.accumulator_started;
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

Result<Schedule> ExpandHeadRing(const PlanContext& ctx, const SchemeParams& params,
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
    if (!sched::HandOver(ctx, g, prog)) return sched::ExpansionStopped();
  }
  return s;
}

}  // namespace meshplan::planner::schemes
