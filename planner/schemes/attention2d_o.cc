// ATTENTION2D-O: ATTENTION2D's a x b tile (the Mesh assignment, attention2d.cc) with the gathers
// and reductions broken into ring steps that overlap the blocks (docs/schemes.md, "attention2d-o";
// docs/schedules.md, "ATTENTION2D-O").
//
// Rank g = x + a*y computes its tile row by row: row k is Q slot k of its Q group (shard
// a*y + (x+k) mod a, own first), each row the b KV slots of its KV group (shard (g + l*a) mod P,
// own first). Q moves x -> x-1 inside the Q group, K,V move g -> g-a inside the KV group, as in
// Mesh-Attention (ALGORITHMS.md), so every member receives slot k+1 from its next member.
// - Row 0 runs a KV ring pass (the shift for block l+1 overlaps block l) while one Q shift
//   brings slot 1; row k's Q shift brings slot k+1. Every later row finds all K,V present.
// - The partial of row k (O+LSE forward, dQ backward) is complete after row k; it follows Q's
//   path one row behind (owner-last chain, the reduce-scatter of ATTENTION2D as a-1 hops): rank x
//   merges the partial its next member sent after row k-1 into its own row k and sends the sum on;
//   the owner gets the total after the last row and merges it into its row 0.
// - The backward's dK+dV partial of KV slot l is complete at block l of the last row, which runs
//   the owner-last dK+dV chain of a ring pass (b-1 hops).
// Bytes equal ATTENTION2D's (the same tensors, as ring steps instead of ring collectives).
#include <algorithm>
#include <optional>

#include "planner/compute_model.h"
#include "planner/patterns/ring_pass.h"
#include "planner/schedule_builder.h"
#include "planner/schemes/common.h"
#include "planner/schemes/registry.h"

namespace meshplan::planner::schemes {
namespace {

constexpr std::string_view kName = "attention2d-o";

// Appends a stage, or counts it into the previous one when it is the same stage again.
void AddFolded(Estimate& e, const std::string& label, double compute_s, double comm_s,
               int64_t count) {
  if (count <= 0) return;
  if (!e.stages.empty() && e.stages.back().label == label &&
      e.stages.back().compute_s == compute_s && e.stages.back().comm_s == comm_s &&
      e.stages.back().overlapped) {
    e.stages.back().count += count;
  } else {
    e.stages.push_back({label, compute_s, comm_s, true, count});
  }
}

// The ATTENTION2D-O pass (docs/schedules.md, "ATTENTION2D-O"): the a x b tile row by row,
// `block_s` per forward block (the backward scales it). Row 0 gathers K,V as a ring (one shift
// per block); one Q-group shift per row brings the next row's Q slot; the partial of row k
// (O+LSE forward, dQ backward) follows one row behind (owner-last chain, a-1 hops, the last
// exposed); the backward's last row carries the owner-last dK+dV chain (b-1 hops, the last
// exposed). Adds its stages and traffic to the estimate and returns the bytes one rank sends.
double Attention2DOverlapPass(Estimate& e, const PlanContext& ctx, const Placement& placement,
                              int q_dim, int kv_dim, Phase phase, bool cache, double block_s,
                              const ShardLayout& layout, KernelShape shape, Traffic& traffic) {
  const int64_t a = placement.DimSize(q_dim), b = placement.DimSize(kv_dim);
  const ShardBytes& s = ctx.shard;
  CommModel& comm = *ctx.comm;
  const bool fwd = phase == Phase::kForward;
  const bool move_kv = fwd || !cache;
  // Message sizes (docs/schemes.md, attention2d-o row): the Q-group shift carries Q (forward) or
  // Q, dO, LSE, D (backward; no Q with cache); the Q-group chain O+LSE or dQ; the KV group K+V
  // (not in a cached backward) and the backward's dK+dV chain.
  const double q_bytes = fwd ? s.q : (cache ? 0.0 : s.q) + s.q + 2 * s.lse;
  const double part_bytes = fwd ? s.o_partial + s.lse : s.dq_partial;
  const double kv_bytes = move_kv ? s.kv : 0.0;
  const double dkv_bytes = fwd ? 0.0 : s.dkv_partial;
  const double t_q = comm.RingShift(placement, q_dim, q_bytes, a - 1, &traffic);
  const double t_part = comm.RingShift(placement, q_dim, part_bytes, a - 1, &traffic);
  const double t_kv = comm.RingShift(placement, kv_dim, kv_bytes, b - 1, &traffic);
  const double t_dkv = comm.RingShift(placement, kv_dim, dkv_bytes, b - 1, &traffic);
  // The Q-group and KV-group traffic share a link when both groups' slowest hops use one level
  // (the GPU's port into that level); otherwise they run concurrently.
  const bool shared =
      a > 1 && b > 1 &&
      comm.BottleneckLevel(placement, q_dim, q_bytes) ==
          comm.BottleneckLevel(placement, kv_dim, fwd || !cache ? kv_bytes : dkv_bytes);
  // A Q slot's b blocks merge the partials of all but the first with pairs (ring_pass.h): the
  // busiest rank's merges over its a*b blocks.
  const double t_blk = RingStepSeconds(
      ctx, phase, fwd ? block_s : ctx.BackwardSeconds(block_s, 1, shape), layout, a, a * b);
  const std::string ph = PhaseLabel(phase);

  // KV-group traffic during block l of row k (the compute stream waits for it at the next block):
  // row 0 shifts K,V for block l+1 (l <= b-2); the backward's last row carries the dK+dV hop sent
  // after block l-1 (l >= 2; the hop sent after the last block is the tail below).
  // A cached backward's last row runs the own slot last (attention2d_o.cc): its first hop
  // is sent after step 0 and its last, the own slot's total, lands during the own block: step l
  // (l >= 1) waits for a hop and no tail is left.
  const bool own_last = !fwd && cache && b >= 2;
  const int64_t first_hop = own_last ? 1 : 2;
  auto kv_step = [&](int64_t k, int64_t l) {
    return (k == 0 && move_kv && l <= b - 2 ? t_kv : 0.0) +
           (!fwd && k == a - 1 && l >= first_hop ? t_dkv : 0.0);
  };
  const std::string row_label = ph + " row (Q shift, partial hop)";
  // Emits row k, `count` times (count > 1 only for rows without KV-group traffic, which are
  // identical from row 2 to row a-2). Work is O(1) per call: steps with equal traffic are one
  // stage, so a 16384-rank search evaluates a 128 x 128 tile as fast as a 2 x 2 one.
  auto add_row = [&](int64_t k, int64_t count) {
    // Q-group traffic during row k: the partial of row k-1 (k >= 2; row 0's partial is the
    // owner's and stays) and the Q shift that brings row k+1's slot (k <= a-2).
    const double q_comm = (k >= 2 ? t_part : 0.0) + (k <= a - 2 ? t_q : 0.0);
    const bool kv_row = (k == 0 && move_kv && b > 1) || (!fwd && k == a - 1 && b > first_hop);
    if (!kv_row) {  // every block's data is present: the row's b blocks hide its Q-group traffic
      AddFolded(e, row_label, static_cast<double>(b) * t_blk, q_comm, count);
      return;
    }
    // A row with KV-group traffic: block steps gated by it. The row's Q-group traffic starts
    // with the row; on a link of its own it only has to be done by the row's end, on the same
    // link it delays the first KV-group transfer it meets (charged to that step).
    double kv_path = 0, q_left = shared ? q_comm : 0.0;
    const std::string label =
        ph + (k == 0 ? " row 0 block (KV shift)" : " last row block (dK,dV hop)");
    // kv_step changes only at l = first_hop and l = b-1: it is constant between sorted cut points.
    std::array<int64_t, 4> cuts = {0, std::min<int64_t>(first_hop, b), std::max<int64_t>(0, b - 1),
                                   b};
    std::sort(cuts.begin(), cuts.end());
    for (size_t i = 0; i + 1 < cuts.size(); ++i) {
      int64_t lo = cuts[i];
      const int64_t hi = cuts[i + 1];
      if (lo >= hi) continue;
      const double c = kv_step(k, lo);
      if (c > 0 && q_left > 0) {
        kv_path += std::max(t_blk, c + q_left);
        AddFolded(e, label, t_blk, c + q_left, 1);
        q_left = 0;
        ++lo;
      }
      kv_path += static_cast<double>(hi - lo) * std::max(t_blk, c);
      AddFolded(e, label, t_blk, c, hi - lo);
    }
    AddExposed(e, ph + " row Q-group wait", shared ? q_left : std::max(0.0, q_comm - kv_path));
  };
  add_row(0, 1);
  if (a >= 3) add_row(1, 1);
  if (a >= 4) add_row(2, a - 3);  // rows 2 .. a-2
  if (a >= 2) add_row(a - 1, 1);
  // Tail: the last hop of each chain follows the last block.
  const double q_tail = a > 1 ? t_part : 0.0;
  const double kv_tail = !fwd && b > 1 && !own_last ? t_dkv : 0.0;
  const double tail = shared ? q_tail + kv_tail : std::max(q_tail, kv_tail);
  if (tail > 0) AddExposed(e, fwd ? "fwd last O,LSE hop" : "bwd last dQ / dK,dV hops", tail);
  // The incoming partials are merged on the compute stream once they are in (the expansion's
  // Merge ops): the Q-group chain's a - 1 (rows 2 .. a-1 and the own shard's total) and the
  // backward's dK,dV chain's b - 1 (its last row's blocks 2 .. b-1 and the own slot's total). A
  // merge waits for its partial and the next block for it, so none hides behind the blocks.
  const GpuSpec& gpu = ctx.topology.gpu;
  const double merges_s =
      (static_cast<double>(a - 1) * PartialMergeSeconds(gpu, part_bytes) +
       (fwd ? 0.0 : static_cast<double>(b - 1) * PartialMergeSeconds(gpu, dkv_bytes))) *
      gpu.SharedComputeSlowdown();
  if (merges_s > 0) AddCompute(e, ph + " merges of incoming partials", merges_s);
  return static_cast<double>(a - 1) * (q_bytes + part_bytes) +
         static_cast<double>(b - 1) * (kv_bytes + dkv_bytes);
}

class Attention2DOverlapStrategy final : public Strategy {
 public:
  Scheme scheme() const override { return Scheme(kName); }
  std::string_view summary() const override {
    return "ATTENTION2D-O: ATTENTION2D's tile, its gathers and reductions as ring steps overlapped "
           "with the blocks";
  }
  std::vector<RankDim> RankDims(const SchemeParams& p) const override { return TileGrid(p); }
  std::string DescribeDegrees(const SchemeParams& p) const override { return TileDegrees(p); }
  std::vector<SchemeParams> Enumerate(const PlanContext& ctx) const override;
  Estimate Evaluate(const PlanContext& ctx, const SchemeParams& params) const override;
  Result<Schedule> Expand(const PlanContext& ctx, const SchemeParams& params) const override;
};

std::vector<SchemeParams> Attention2DOverlapStrategy::Enumerate(const PlanContext& ctx) const {
  std::vector<SchemeParams> out;
  SchemeParams p;
  p.scheme = scheme();
  AddTileCandidates(ctx, *this, p, ctx.num_ranks, /*both_reduce_chains=*/false, &out);
  return out;
}

Estimate Attention2DOverlapStrategy::Evaluate(const PlanContext& ctx, const SchemeParams& p) const {
  const Workload& w = ctx.workload;
  const int64_t ranks = ctx.num_ranks;
  if (std::string why = TileGridProblem(ctx, p); !why.empty()) return Invalid(p, why);
  const ShardLayout layout{p.layout, w.seq_len, ranks, 1};
  if (std::string why = LayoutOrPlacementProblem(p, layout, w.mask); !why.empty())
    return Invalid(p, why);

  Estimate e = ValidEstimate(p);
  const ShardBytes& s = ctx.shard;
  const int64_t a = p.tile_a, b = p.tile_b;
  const Placement placement(RankDims(p), p.placement);
  const std::vector<int64_t>& pairs = ctx.TilePairsFor(layout, a);
  SetFlops(e, ctx, pairs, w.q_heads);
  // The busiest rank's tile spread evenly over its a*b blocks (as ATTENTION2D's tile compute).
  const KernelShape shape = ctx.ShapeOf(layout, w.q_heads);
  const double tile_s =
      KernelSeconds(ctx.topology.gpu, w.dtype, w.head_dim,
                    ctx.KernelForwardFlopsMax(pairs, layout, a, w.q_heads), shape, a * b);
  const double block_s = tile_s / static_cast<double>(a * b);
  Traffic traffic(ranks, ctx.topology.num_levels());
  double fwd_bytes = 0, bwd_bytes = 0;
  if (HasForward(w.pass)) {
    fwd_bytes = Attention2DOverlapPass(e, ctx, placement, 0, 1, Phase::kForward, false, block_s,
                                       layout, shape, traffic);
  }
  if (HasBackward(w.pass)) {
    bwd_bytes = Attention2DOverlapPass(e, ctx, placement, 0, 1, Phase::kBackward, p.cache_forward,
                                       block_s, layout, shape, traffic);
  }
  SetTraffic(e, traffic, fwd_bytes, bwd_bytes);
  // Held at the peak: the a-1 other Q slots and b-1 other KV slots (kept for the later rows, as
  // ATTENTION2D's gathers); forward partials: the own row-0 (O, LSE) until the chain's total
  // arrives, the row being computed and the incoming partial (one when a = 1). The backward adds
  // dO, LSE, D per Q slot, the same three dQ partials and b dK,dV partials plus one incoming.
  const double q_partials = a > 1 ? 3.0 : 1.0;
  const double dkv_incoming = b > 1 ? 1.0 : 0.0;
  SetMemory(e, ctx, (a - 1) * s.q + (b - 1) * s.kv + q_partials * (s.o_partial + s.lse),
            (a - 1) * ((p.cache_forward ? 0.0 : s.q) + s.q + 2 * s.lse) +
                (p.cache_forward ? 0.0 : (b - 1) * s.kv) + q_partials * s.dq_partial +
                (b + dkv_incoming) * s.dkv_partial,
            (a - 1) * s.q + (b - 1) * s.kv);
  FinishTime(e);
  return e;
}

// What one phase moves (docs/schemes.md, attention2d-o row).
struct PhaseMessages {
  Phase phase = Phase::kForward;
  uint16_t q_tensors = 0, part_tensors = 0;
  int64_t q_bytes = 0, part_bytes = 0, kv_bytes = 0, dkv_bytes = 0;
  int64_t block_partial_bytes = 0;  // RingStepPartialBytes of the phase
  bool move_kv = true;              // row 0 shifts K,V (not in a cached backward)
  bool dkv_chain = false;           // backward: the last row reduces dK+dV
};

// The rank's view of its groups: peers and the global shard of every slot.
struct RankView {
  int32_t q_next = -1, q_prev = -1, kv_next = -1, kv_prev = -1;  // receive from next, send to prev
  std::vector<int64_t> q_slot, kv_slot;
};

Op Message(OpKind kind, const PhaseMessages& m, StreamId stream, uint16_t tensors, int32_t peer,
           int64_t step, sched::Channel channel, int64_t bytes) {
  Op op;
  op.kind = kind;
  op.phase = m.phase;
  op.stream = stream;
  op.tensors = tensors;
  op.peer = peer;
  op.step = static_cast<int32_t>(step);
  op.tag = sched::MakeTag(m.phase, channel, step);
  op.bytes = bytes;
  return op;
}

Op MergeOp(Phase phase, uint16_t tensors, int64_t step) {
  Op op;
  op.kind = OpKind::kMerge;
  op.phase = phase;
  op.stream = StreamId::kCompute;
  op.tensors = tensors;
  op.step = static_cast<int32_t>(step);
  return op;
}

// Ops the forward leaves for a cached backward: the receive that delivered each slot.
struct Arrivals {
  std::vector<std::optional<uint32_t>> q, kv;
};

// Emits one phase of rank `v` and returns the receives that delivered its slots. Q-group messages
// use the collective stream (sends before receives, in the order both ends list them), K,V
// messages the send/recv streams, so the two groups' transfers overlap each other and the blocks.
// `start` is the op after which the rank's own data is final (the forward's last op before a
// backward); `cached` the forward's arrivals when the backward keeps them.
Arrivals EmitPhase(RankProgram& prog, const PlanContext& ctx, const ShardLayout& layout,
                   const PhaseMessages& m, const RankView& v, std::optional<uint32_t> start,
                   const Arrivals* cached) {
  const int64_t a = static_cast<int64_t>(v.q_slot.size()),
                b = static_cast<int64_t>(v.kv_slot.size());
  const int64_t heads = ctx.workload.q_heads;
  Arrivals got;
  got.q.assign(static_cast<size_t>(a), std::nullopt);
  got.kv.assign(static_cast<size_t>(b), std::nullopt);
  // The op after which slot k's Q-side data (slot l's K,V) is here: the own slot's `start`, this
  // phase's receive, and for a cached backward the forward's receive of what it does not resend.
  auto q_deps = [&](int64_t k) {
    if (k == 0) return sched::Deps({start});
    return sched::Deps({got.q[static_cast<size_t>(k)],
                        cached != nullptr ? cached->q[static_cast<size_t>(k)] : std::nullopt});
  };
  auto kv_arrival = [&](int64_t l) -> std::optional<uint32_t> {
    if (l == 0) return start;
    if (m.move_kv) return got.kv[static_cast<size_t>(l)];
    return cached != nullptr ? cached->kv[static_cast<size_t>(l)] : std::nullopt;
  };
  std::optional<uint32_t> last_compute = start;  // last op on the compute stream so far
  std::optional<uint32_t> part_in;               // receive of the partial merged in the next row
  for (int64_t k = 0; k < a; ++k) {
    const int64_t q_shard = v.q_slot[static_cast<size_t>(k)];
    // Q shift: forward slot k (own at k = 0), receive slot k+1 for the next row.
    if (k + 1 < a) {
      Op send = Message(OpKind::kSend, m, StreamId::kCollective, m.q_tensors, v.q_prev, k,
                        sched::kChanQ, m.q_bytes);
      send.q_shard = static_cast<int32_t>(q_shard);
      prog.Add(send, sched::Deps({k == 0 ? start : got.q[static_cast<size_t>(k)]}));
      Op recv = Message(OpKind::kRecv, m, StreamId::kCollective, m.q_tensors, v.q_next, k,
                        sched::kChanQ, m.q_bytes);
      recv.q_shard = static_cast<int32_t>(v.q_slot[static_cast<size_t>(k + 1)]);
      got.q[static_cast<size_t>(k + 1)] = prog.Add(recv);
    }
    const bool kv_ring = k == 0 && m.move_kv;
    const bool chain = m.dkv_chain && k == a - 1;
    // A cached backward has every K,V slot from the start: like Ring's (RingPass::own_shard_last)
    // it runs slots 1..b-1 first and the own slot last, so the chain's last hop, the total of the
    // own slot, travels while the own block runs. Chain messages are then tagged by block step
    // (slot l at step l-1), as Ring's; otherwise by slot.
    const bool own_last = chain && !m.move_kv && b >= 2;
    const int64_t tag_shift = own_last ? 1 : 0;
    std::optional<uint32_t> own_total;          // own_last: the receive of the own slot's total
    std::optional<uint32_t> kv_buffer = start;  // row 0's ring: the op that delivered slot l
    bool started = false;                       // Q slot k's accumulator holds a block
    for (int64_t i = 0; i < b; ++i) {
      const int64_t l = own_last ? (i + 1) % b : i;
      const int64_t kv_shard = v.kv_slot[static_cast<size_t>(l)];
      // Messages kv_next -> this rank run KV(0..b-2) in row 0, then the chain's dK+dV hops
      // (interleaved as in a ring pass when row 0 is also the last row, a = 1).
      std::optional<uint32_t> dkv_in;
      if (chain && l >= 2) {
        Op recv = Message(OpKind::kRecv, m, StreamId::kRecv, kTensorDKV, v.kv_next,
                          l - 1 - tag_shift, sched::kChanDkv, m.dkv_bytes);
        recv.kv_shard = static_cast<int32_t>(kv_shard);
        dkv_in = prog.Add(recv);
      }
      if (own_last && l == 0) {  // the total of the own slot, sent by kv_next after its last step
        Op recv = Message(OpKind::kRecv, m, StreamId::kRecv, kTensorDKV, v.kv_next, b - 2,
                          sched::kChanDkv, m.dkv_bytes);
        recv.kv_shard = static_cast<int32_t>(kv_shard);
        own_total = prog.Add(recv);
      }
      if (kv_ring && l + 1 < b) {
        Op recv = Message(OpKind::kRecv, m, StreamId::kRecv, kTensorKV, v.kv_next, l,
                          sched::kChanKv, m.kv_bytes);
        recv.kv_shard = static_cast<int32_t>(v.kv_slot[static_cast<size_t>(l + 1)]);
        const uint32_t r = prog.Add(recv);
        Op send = Message(OpKind::kSend, m, StreamId::kSend, kTensorKV, v.kv_prev, l,
                          sched::kChanKv, m.kv_bytes);
        send.kv_shard = static_cast<int32_t>(kv_shard);
        prog.Add(send, sched::Deps({kv_buffer}));
        got.kv[static_cast<size_t>(l + 1)] = r;
        kv_buffer = r;
      }
      std::vector<uint32_t> deps = q_deps(k);
      if (const auto kv = kv_arrival(l);
          kv && std::find(deps.begin(), deps.end(), *kv) == deps.end()) {
        deps.push_back(*kv);
      }
      const auto compute = sched::EmitCompute(prog, ctx, layout, m.phase, q_shard, kv_shard, 0,
                                              heads, k * b + l, deps);
      // A Q slot's blocks after its first merge their partials (ring_pass.h).
      if (compute) {
        if (started) prog.ops[*compute].bytes = m.block_partial_bytes;
        started = true;
      }
      if (compute) last_compute = compute;
      if (chain && l >= 1) {  // this block completed KV slot l's partial on this rank
        if (dkv_in) {
          Op merge = MergeOp(m.phase, kTensorDKV, l);
          merge.kv_shard = static_cast<int32_t>(kv_shard);
          last_compute = prog.Add(merge, sched::Deps({dkv_in, last_compute}));
        }
        Op send = Message(OpKind::kSend, m, StreamId::kSend, kTensorDKV, v.kv_prev, l - tag_shift,
                          sched::kChanDkv, m.dkv_bytes);
        send.kv_shard = static_cast<int32_t>(kv_shard);
        prog.Add(send, sched::Deps({last_compute}));
      }
      if (own_total && l == 0) {
        Op merge = MergeOp(m.phase, kTensorDKV, b);
        merge.kv_shard = static_cast<int32_t>(kv_shard);
        last_compute = prog.Add(merge, sched::Deps({own_total, last_compute}));
      }
    }
    if (chain && b >= 2 &&
        !own_last) {  // the total of the own KV slot, sent by kv_next after its last block
      Op recv = Message(OpKind::kRecv, m, StreamId::kRecv, kTensorDKV, v.kv_next, b - 1,
                        sched::kChanDkv, m.dkv_bytes);
      recv.kv_shard = static_cast<int32_t>(v.kv_slot[0]);
      const uint32_t r = prog.Add(recv);
      Op merge = MergeOp(m.phase, kTensorDKV, b);
      merge.kv_shard = recv.kv_shard;
      last_compute = prog.Add(merge, sched::Deps({r, last_compute}));
    }
    if (k >= 1) {  // row k's partial is complete: fold in the chain from q_next and pass it on
      if (part_in) {
        Op merge = MergeOp(m.phase, m.part_tensors, k);
        merge.q_shard = static_cast<int32_t>(q_shard);
        last_compute = prog.Add(merge, sched::Deps({part_in, last_compute}));
      }
      Op send = Message(OpKind::kSend, m, StreamId::kCollective, m.part_tensors, v.q_prev, k,
                        sched::kChanQPartial, m.part_bytes);
      send.q_shard = static_cast<int32_t>(q_shard);
      prog.Add(send, sched::Deps({last_compute}));
      // q_next's row-k partial is of our slot k+1 (after the last row: our own shard, the total).
      Op recv = Message(OpKind::kRecv, m, StreamId::kCollective, m.part_tensors, v.q_next, k,
                        sched::kChanQPartial, m.part_bytes);
      recv.q_shard = static_cast<int32_t>(v.q_slot[static_cast<size_t>((k + 1) % a)]);
      part_in = prog.Add(recv);
    }
  }
  if (part_in) {  // the chain's total of the own shard
    Op merge = MergeOp(m.phase, m.part_tensors, a);
    merge.q_shard = static_cast<int32_t>(v.q_slot[0]);
    prog.Add(merge, sched::Deps({part_in, last_compute}));
  }
  return got;
}

Result<Schedule> Attention2DOverlapStrategy::Expand(const PlanContext& ctx,
                                                    const SchemeParams& params) const {
  const int64_t a = params.tile_a, b = params.tile_b, p = ctx.num_ranks;
  const Workload& w = ctx.workload;
  const ShardLayout layout{params.layout, w.seq_len, p, 1};
  MESHPLAN_RETURN_IF_ERROR(sched::CheckGrid(ctx, params, RankDims(params), layout, 1));
  const ShardBytes& sb = ctx.shard;
  PhaseMessages fwd;
  fwd.phase = Phase::kForward;
  fwd.q_tensors = kTensorQ;
  fwd.part_tensors = kTensorO | kTensorLse;
  fwd.q_bytes = sched::WholeBytes(sb.q);
  fwd.part_bytes = sched::WholeBytes(sb.o_partial + sb.lse);
  fwd.kv_bytes = sched::WholeBytes(sb.kv);
  fwd.block_partial_bytes = sched::WholeBytes(RingStepPartialBytes(ctx, Phase::kForward));
  PhaseMessages bwd;
  bwd.phase = Phase::kBackward;
  // LSE travels because the forward's chain delivered the final LSE only to the owner.
  bwd.q_tensors = static_cast<uint16_t>((params.cache_forward ? 0 : kTensorQ) | kTensorDO |
                                        kTensorLse | kTensorD);
  bwd.part_tensors = kTensorDQ;
  bwd.q_bytes = sched::WholeBytes((params.cache_forward ? 0.0 : sb.q) + sb.q + 2 * sb.lse);
  bwd.part_bytes = sched::WholeBytes(sb.dq_partial);
  bwd.kv_bytes = sched::WholeBytes(sb.kv);
  bwd.dkv_bytes = sched::WholeBytes(sb.dkv_partial);
  bwd.block_partial_bytes = sched::WholeBytes(RingStepPartialBytes(ctx, Phase::kBackward));
  bwd.move_kv = !params.cache_forward;
  bwd.dkv_chain = true;

  Schedule s =
      sched::NewSchedule(ctx, params, layout, static_cast<size_t>(2 * a * b + 6 * (a + b)));
  RankView v;
  v.q_slot.resize(static_cast<size_t>(a));
  v.kv_slot.resize(static_cast<size_t>(b));
  for (int64_t g = 0; g < p; ++g) {
    const int64_t x = g % a, base = g - x;
    v.q_next = static_cast<int32_t>(base + (x + 1) % a);
    v.q_prev = static_cast<int32_t>(base + (x + a - 1) % a);
    v.kv_next = static_cast<int32_t>((g + a) % p);
    v.kv_prev = static_cast<int32_t>((g + p - a) % p);
    for (int64_t k = 0; k < a; ++k) v.q_slot[static_cast<size_t>(k)] = base + (x + k) % a;
    for (int64_t l = 0; l < b; ++l) v.kv_slot[static_cast<size_t>(l)] = (g + l * a) % p;
    RankProgram& prog = s.ranks[static_cast<size_t>(g)];
    Arrivals forward;
    if (HasForward(w.pass)) forward = EmitPhase(prog, ctx, layout, fwd, v, std::nullopt, nullptr);
    if (HasBackward(w.pass)) {
      // After a forward, the backward's own Q-side data (final O, LSE; D from them) is ready once
      // the forward's last compute-stream op (the chain's final merge) is done.
      const auto start = sched::LastOnStream(prog, StreamId::kCompute);
      const bool cached = params.cache_forward && HasForward(w.pass);
      EmitPhase(prog, ctx, layout, bwd, v, start, cached ? &forward : nullptr);
    }
    if (!sched::HandOver(ctx, g, prog)) return sched::ExpansionStopped();
  }
  return s;
}

}  // namespace

std::unique_ptr<Strategy> NewAttention2DOverlapStrategy() {
  return std::make_unique<Attention2DOverlapStrategy>();
}

}  // namespace meshplan::planner::schemes
