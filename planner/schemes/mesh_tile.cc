// The Mesh-Attention tile pass (mesh_tile.h): validity and estimate first, then the expansion of
// the a x b tile (p2p ring shifts, greedy step schedule), alone or with a head-parallel
// dimension (Ulysses all-to-all over U ranks around a tile over M = P/U ranks).
// docs/mesh-attention.md explains the design; docs/schemes.md fixes the bytes of every message.
//
// The greedy step schedule is computed once per phase in local indices and replayed for every
// rank, translating slots to global shards with the maps of planner/mesh/assignment.h.
#include "planner/schemes/mesh_tile.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "planner/mesh/assignment.h"
#include "planner/mesh/greedy.h"
#include "planner/mesh/step_costs.h"
#include "planner/patterns/all_to_all.h"
#include "planner/patterns/ring_pass.h"
#include "planner/schemes/common.h"

namespace meshplan::planner::schemes {

std::string MeshTileProblem(const SchemeParams& p, int64_t mesh_ranks) {
  if (p.tile_a < 1 || p.tile_b < 1 || p.tile_a * p.tile_b != mesh_ranks) {
    return "tile " + std::to_string(p.tile_a) + " x " + std::to_string(p.tile_b) +
           " does not cover the " + std::to_string(mesh_ranks) +
           " mesh ranks (a*b must equal them)";
  }
  return "";
}

namespace {

// Hops of a reduce chain over a group of n ranks (docs/schemes.md, "Reduce chains").
int64_t ChainHops(ReduceChain chain, int64_t n) {
  if (n <= 1) return 0;
  return chain == ReduceChain::kOwnerLast ? n - 1 : n;
}

// One Mesh-Attention tile pass following the greedy step schedule with this plan's step costs
// (planner/mesh/step_costs.h), the same step table the expansion below replays. Adds its stages
// and traffic to the estimate and returns the bytes one rank sends.
double MeshPass(Estimate& e, const PlanContext& ctx, const SchemeParams& params,
                const Placement& placement, Phase phase, Traffic& traffic) {
  const int q_dim = mesh::QDim(placement), kv_dim = mesh::KvDim(placement);
  const int64_t a = placement.DimSize(q_dim), b = placement.DimSize(kv_dim);
  const bool fwd = phase == Phase::kForward;
  const mesh::MessageBytes m = mesh::PhaseMessageBytes(ctx.shard, phase, params.cache_forward);
  const int64_t ca = ChainHops(params.reduce_chain, a);
  const int64_t cb = fwd ? 0 : ChainHops(params.reduce_chain, b);
  // Per-level bytes of every message the pass sends.
  CommModel& comm = *ctx.comm;
  comm.RingShift(placement, q_dim, m.q_shift, a - 1, &traffic);
  comm.RingShift(placement, kv_dim, m.kv_shift, b - 1, &traffic);
  comm.RingShift(placement, q_dim, m.q_partial, ca, &traffic);
  comm.RingShift(placement, kv_dim, m.kv_partial, cb, &traffic);

  // The same step table the schedule expansion replays (planner/mesh/step_costs.h).
  const mesh::StepTimes t = mesh::PhaseStepTimes(ctx, params, placement, phase);
  mesh::GreedyOptions options;
  options.a = a;
  options.b = b;
  options.phase = phase;
  options.chain = params.reduce_chain;
  options.kv_present = !fwd && params.cache_forward;
  options.costs = t.Costs();
  const std::vector<mesh::MeshStep> steps = mesh::GreedySchedule(options);

  // Each partial a step sends along a chain, the rank also receives (its recv peer sent its own)
  // and merges on the compute stream after the step's blocks (EmitStep's Merge ops), once the
  // partial is in: the step takes max(blocks, transfers) + merges, which an overlapped stage
  // holding the merges on both sides gives (and the merges count as compute).
  const GpuSpec& gpu = ctx.topology.gpu;
  const double q_merge = PartialMergeSeconds(gpu, m.q_partial) * gpu.SharedComputeSlowdown();
  const double kv_merge = PartialMergeSeconds(gpu, m.kv_partial) * gpu.SharedComputeSlowdown();
  const std::string label = std::string(PhaseLabel(phase)) + " mesh step";
  for (const mesh::MeshStep& step : steps) {
    const double merges = static_cast<double>(step.q_partial_sends.size()) * q_merge +
                          static_cast<double>(step.kv_partial_sends.size()) * kv_merge;
    const double compute = static_cast<double>(step.compute.size()) * t.block + merges;
    const double q_comm = (step.shift == mesh::ShiftKind::kQ ? t.q_shift : 0.0) +
                          static_cast<double>(step.q_partial_sends.size()) * t.q_partial;
    const double kv_comm = (step.shift == mesh::ShiftKind::kKV ? t.kv_shift : 0.0) +
                           static_cast<double>(step.kv_partial_sends.size()) * t.kv_partial;
    const double comm_s = (t.shared_link ? q_comm + kv_comm : std::max(q_comm, kv_comm)) + merges;
    if (!e.stages.empty() && e.stages.back().label == label &&
        e.stages.back().compute_s == compute && e.stages.back().comm_s == comm_s) {
      ++e.stages.back().count;  // fold identical consecutive steps
    } else {
      e.stages.push_back({label, compute, comm_s, true, 1});
    }
  }
  return static_cast<double>(a - 1) * m.q_shift + static_cast<double>(b - 1) * m.kv_shift +
         static_cast<double>(ca) * m.q_partial + static_cast<double>(cb) * m.kv_partial;
}

}  // namespace

void MeshTilePass(Estimate& e, const PlanContext& ctx, const SchemeParams& p,
                  const Placement& placement, const ShardLayout& layout, int64_t heads,
                  Traffic& traffic) {
  // The head-parallel dimension, if any.
  const int ulysses_dim = mesh::QDim(placement) == 1 ? 0 : -1;
  const Workload& w = ctx.workload;
  const int64_t a = p.tile_a, b = p.tile_b;
  SetFlops(e, ctx, ctx.TilePairsFor(layout, a), heads);
  double fwd_bytes = 0, bwd_bytes = 0;
  if (HasForward(w.pass)) {
    if (ulysses_dim >= 0)
      fwd_bytes += UlyssesIn(e, ctx, placement, ulysses_dim, Phase::kForward, false, traffic);
    fwd_bytes += MeshPass(e, ctx, p, placement, Phase::kForward, traffic);
    if (ulysses_dim >= 0)
      fwd_bytes += UlyssesOut(e, ctx, placement, ulysses_dim, Phase::kForward, traffic);
  }
  if (HasBackward(w.pass)) {
    if (ulysses_dim >= 0) {
      bwd_bytes +=
          UlyssesIn(e, ctx, placement, ulysses_dim, Phase::kBackward, p.cache_forward, traffic);
    }
    bwd_bytes += MeshPass(e, ctx, p, placement, Phase::kBackward, traffic);
    if (ulysses_dim >= 0)
      bwd_bytes += UlyssesOut(e, ctx, placement, ulysses_dim, Phase::kBackward, traffic);
  }
  SetTraffic(e, traffic, fwd_bytes, bwd_bytes);
  const ShardBytes& s = ctx.shard;
  // Mesh keeps every Q and KV slot it receives (the paper's chunk cache), a partial accumulator
  // per Q slot plus one incoming partial; the backward adds dO, LSE, D per Q slot and partial
  // dQ per Q slot, dK,dV per KV slot. Ulysses adds head-layout copies.
  const double ulysses_fwd = ulysses_dim >= 0 ? 2 * s.q + s.kv : 0.0;
  const double ulysses_bwd = ulysses_dim >= 0 ? 2 * s.q + s.kv + s.lse : 0.0;
  SetMemory(e, ctx, ulysses_fwd + (a - 1) * s.q + (b - 1) * s.kv + (a + 1) * (s.o_partial + s.lse),
            ulysses_bwd + (a - 1) * ((p.cache_forward ? 0.0 : s.q) + s.q + 2 * s.lse) +
                (p.cache_forward ? 0.0 : (b - 1) * s.kv) + (a + 1) * s.dq_partial +
                (b + 1) * s.dkv_partial,
            ulysses_bwd + (a - 1) * s.q + (b - 1) * s.kv);
  FinishTime(e);
}

namespace {

using mesh::MeshShape;
using mesh::MeshStep;
using mesh::ShiftKind;

constexpr uint32_t kNoOp = 0xFFFFFFFFu;

// Message kinds for tags: both ends compute the same tag from (phase, kind, sender's step, slot).
enum MessageKind : int32_t { kQShift = 0, kKvShift = 1, kQPartial = 2, kKvPartial = 3 };

int32_t MakeTag(Phase phase, MessageKind kind, int32_t step, int32_t slot) {
  // phase:1 | kind:2 | step:16 | slot:12 bits; wrap-around only weakens the pairing check.
  const uint32_t tag = (static_cast<uint32_t>(phase) << 30) | (static_cast<uint32_t>(kind) << 28) |
                       ((static_cast<uint32_t>(step) & 0xFFFFu) << 12) |
                       (static_cast<uint32_t>(slot) & 0xFFFu);
  return static_cast<int32_t>(tag & 0x7FFFFFFFu);
}

int64_t RoundBytes(double bytes) { return static_cast<int64_t>(std::llround(bytes)); }

// What one phase moves: payload tensors and bytes per message kind (docs/schemes.md, mesh row).
struct PhasePlan {
  Phase phase = Phase::kForward;
  std::vector<MeshStep> steps;
  uint16_t q_shift_tensors = 0, kv_shift_tensors = 0, q_partial_tensors = 0, kv_partial_tensors = 0;
  int64_t q_shift_bytes = 0, kv_shift_bytes = 0, q_partial_bytes = 0, kv_partial_bytes = 0;
  bool cached = false;  // backward with cache_forward: Q and KV of every slot kept from the forward
  double flops_factor = 1;
  int64_t block_partial_bytes = 0;  // RingStepPartialBytes of the phase
  // Ulysses all-to-alls around the tile (a head-parallel dimension with U > 1 only).
  uint16_t a2a_in_tensors = 0, a2a_out_tensors = 0;
  int64_t a2a_in_bytes = 0, a2a_out_bytes = 0;
};

// Per-rank scratch reused across ranks (no per-op heap allocation).
struct RankScratch {
  std::vector<BlockWork> work;            // pairs and cut pairs of local block (k, l), k*b + l
  std::vector<int32_t> q_slot, kv_slot;   // global shard of Q#k / KV#l of the current mesh rank
  std::vector<uint32_t> compute_op;       // op index of block (k, l) in the current phase, or kNoOp
  std::vector<uint8_t> q_started;         // Q#k has a block in the current phase already
  std::vector<uint32_t> recv_q, recv_kv;  // Recv that delivered slot (current phase)
  std::vector<uint32_t> fwd_recv_q, fwd_recv_kv;  // forward's, for the cached backward
  std::vector<uint32_t> merge_q, merge_kv;        // Merge of the incoming partial of slot
  std::vector<uint32_t> deps;
};

class MeshExpander {
 public:
  MeshExpander(const PlanContext& ctx, const SchemeParams& params, const std::vector<RankDim>& dims,
               int64_t u_degree)
      : ctx_(ctx), params_(params), dims_(dims), U_(u_degree) {}

  Result<Schedule> Run() {
    const Workload& w = ctx_.workload;
    const int64_t P = ctx_.num_ranks;
    if (U_ < 1 || P % U_ != 0) {
      return Status::Invalid(std::string(SchemeName(params_.scheme)) + ": Ulysses degree " +
                             std::to_string(U_) + " does not divide " + std::to_string(P) +
                             " ranks");
    }
    if (w.q_heads % U_ != 0 || w.kv_heads % U_ != 0) {
      return Status::Invalid(std::string(SchemeName(params_.scheme)) + ": Ulysses degree " +
                             std::to_string(U_) + " does not divide the KV heads (" +
                             std::to_string(w.kv_heads) + ")");
    }
    const int64_t M = P / U_;
    shape_ = {M, params_.tile_a, params_.tile_b};
    if (shape_.a < 1 || shape_.b < 1 || shape_.a * shape_.b != M) {
      return Status::Invalid("mesh tile " + std::to_string(shape_.a) + " x " +
                             std::to_string(shape_.b) + " does not cover " + std::to_string(M) +
                             " ranks");
    }
    Schedule sched;
    sched.scheme = params_.scheme;
    sched.num_ranks = P;
    sched.layout = ShardLayout{params_.layout, w.seq_len, M, U_};
    MESHPLAN_RETURN_IF_ERROR(sched.layout.Validate(w.mask));
    // The placement sets the step costs the greedy schedule depends on.
    MESHPLAN_RETURN_IF_ERROR(ValidatePlacement(dims_, params_.placement));
    const Placement placement(dims_, params_.placement);
    heads_ = w.q_heads / U_;

    const int32_t a = static_cast<int32_t>(shape_.a), b = static_cast<int32_t>(shape_.b);
    if (HasForward(w.pass)) phases_.push_back(MakePhase(Phase::kForward, placement));
    if (HasBackward(w.pass)) phases_.push_back(MakePhase(Phase::kBackward, placement));

    if (U_ > 1) {
      sched.groups.resize(static_cast<size_t>(M));
      for (int64_t m = 0; m < M; ++m) {
        for (int64_t u = 0; u < U_; ++u)
          sched.groups[static_cast<size_t>(m)].push_back(static_cast<int32_t>(u + U_ * m));
      }
    }
    // Capacity bounds per rank (see Emit*): computes, 2 ops per shift, 3 per partial, 2 a2a.
    size_t op_bound = 0, dep_bound = 0;
    for (const PhasePlan& p : phases_) {
      op_bound += static_cast<size_t>(a) * b + 2;
      dep_bound += static_cast<size_t>(a) * b * 5 + 2;  // <= 5 deps per compute
      for (const MeshStep& st : p.steps) {
        const size_t q_partials = st.q_partial_sends.size(),
                     kv_partials = st.kv_partial_sends.size();
        op_bound += (st.shift != ShiftKind::kNone ? 2 : 0) + 3 * (q_partials + kv_partials);
        // A Q partial's send waits for its line's b computes and a merge, a KV partial's for a
        // and a merge; its receive and merge take one each.
        dep_bound += 1 + q_partials * (static_cast<size_t>(b) + 3) +
                     kv_partials * (static_cast<size_t>(a) + 3);
      }
    }
    const std::vector<std::array<TokenRange, 2>> ranges = ShardRanges(sched.layout);

    RankScratch sc;
    sc.work.resize(static_cast<size_t>(a) * b);
    sc.compute_op.resize(static_cast<size_t>(a) * b);
    sc.deps.reserve(static_cast<size_t>(std::max(a, b)) + 4);
    sched.ranks.resize(static_cast<size_t>(P));
    sc.q_slot.resize(static_cast<size_t>(a));
    sc.kv_slot.resize(static_cast<size_t>(b));
    for (int64_t m = 0; m < M; ++m) {
      bool wanted = !ctx_.expand_rank;
      for (int64_t u = 0; u < U_ && !wanted; ++u) wanted = ctx_.expand_rank(u + U_ * m);
      if (!wanted) continue;
      for (int32_t k = 0; k < a; ++k) {
        sc.q_slot[static_cast<size_t>(k)] = static_cast<int32_t>(mesh::QSlotShard(shape_, m, k));
      }
      for (int32_t l = 0; l < b; ++l) {
        sc.kv_slot[static_cast<size_t>(l)] = static_cast<int32_t>(mesh::KvSlotShard(shape_, m, l));
      }
      for (int32_t k = 0; k < a; ++k) {
        for (int32_t l = 0; l < b; ++l) {
          sc.work[static_cast<size_t>(k) * b + l] =
              Work(sched.layout, ranges, sc.q_slot[static_cast<size_t>(k)],
                   sc.kv_slot[static_cast<size_t>(l)]);
        }
      }
      for (int64_t u = 0; u < U_; ++u) {
        if (ctx_.expand_rank && !ctx_.expand_rank(u + U_ * m)) continue;
        RankProgram& prog = sched.ranks[static_cast<size_t>(u + U_ * m)];
        prog.ops.reserve(op_bound);
        prog.deps.reserve(dep_bound);
        EmitRank(prog, m, u, sc);
        // Complete: it may be replaced, or the consumer may stop the expansion.
        if (!sched::HandOver(ctx_, u + U_ * m, prog)) return sched::ExpansionStopped();
      }
    }
    return sched;
  }

 private:
  PhasePlan MakePhase(Phase phase, const Placement& placement) const {
    const ShardBytes& s = ctx_.shard;
    const bool cache = params_.cache_forward;
    PhasePlan p;
    p.phase = phase;
    const A2APayload in = UlyssesInPayload(s, phase, cache && phase == Phase::kBackward);
    const A2APayload out = UlyssesOutPayload(s, phase);
    p.a2a_in_tensors = in.tensors;
    p.a2a_in_bytes = RoundBytes(AllToAllSent(in.bytes, U_));
    p.a2a_out_tensors = out.tensors;
    p.a2a_out_bytes = RoundBytes(AllToAllSent(out.bytes, U_));
    // Message sizes come from the same function the analytic estimate uses.
    const mesh::MessageBytes m =
        mesh::PhaseMessageBytes(s, phase, cache && phase == Phase::kBackward);
    p.q_shift_bytes = RoundBytes(m.q_shift);
    p.kv_shift_bytes = RoundBytes(m.kv_shift);
    p.q_partial_bytes = RoundBytes(m.q_partial);
    p.kv_partial_bytes = RoundBytes(m.kv_partial);
    p.block_partial_bytes = sched::WholeBytes(RingStepPartialBytes(ctx_, phase));
    if (phase == Phase::kForward) {
      p.q_shift_tensors = kTensorQ;
      p.kv_shift_tensors = kTensorKV;
      p.q_partial_tensors = kTensorO | kTensorLse;
    } else {
      p.cached = cache;
      p.flops_factor = kBackwardFlopsFactor;
      // The Q dimension carries what the forward could not have delivered: dO, LSE (final, known
      // only at the owner after the O chain) and D; Q too unless cached.
      p.q_shift_tensors = kTensorDO | kTensorLse | kTensorD | (cache ? 0 : kTensorQ);
      p.kv_shift_tensors = kTensorKV;
      p.q_partial_tensors = kTensorDQ;
      p.kv_partial_tensors = kTensorDKV;
    }
    mesh::GreedyOptions g;
    g.a = shape_.a;
    g.b = shape_.b;
    g.phase = phase;
    g.chain = params_.reduce_chain;
    g.kv_present = p.cached;
    g.costs = mesh::PhaseStepTimes(ctx_, params_, placement, phase).Costs();
    p.steps = mesh::GreedySchedule(g);
    return p;
  }

  static std::vector<std::array<TokenRange, 2>> ShardRanges(const ShardLayout& layout) {
    std::vector<std::array<TokenRange, 2>> out;
    if (layout.kind == Layout::kStriped) return out;
    out.resize(static_cast<size_t>(layout.num_shards));
    for (int64_t i = 0; i < layout.num_shards; ++i) {
      const std::vector<TokenRange> r = layout.Ranges(i);
      out[static_cast<size_t>(i)][0] = r[0];
      out[static_cast<size_t>(i)][1] = r.size() > 1 ? r[1] : TokenRange{};
    }
    return out;
  }

  // layout.Work without its per-call allocations (the same rectangles of the shard ranges).
  BlockWork Work(const ShardLayout& layout, const std::vector<std::array<TokenRange, 2>>& ranges,
                 int64_t q, int64_t k) const {
    if (ranges.empty()) return layout.Work(ctx_.counter, q, k);
    BlockWork work;
    for (const TokenRange& qr : ranges[static_cast<size_t>(q)]) {
      if (qr.size() == 0) continue;
      for (const TokenRange& kr : ranges[static_cast<size_t>(k)]) {
        if (kr.size() > 0) AddRectangleWork(ctx_.counter, qr, kr, &work);
      }
    }
    return work;
  }

  int32_t Canonical(int64_t mesh_rank, int64_t u) const {
    return static_cast<int32_t>(u + U_ * mesh_rank);
  }

  // The ops of canonical rank u + U*m for every phase.
  void EmitRank(RankProgram& prog, int64_t m, int64_t u, RankScratch& sc) const {
    const size_t a = static_cast<size_t>(shape_.a), b = static_cast<size_t>(shape_.b);
    sc.fwd_recv_q.assign(a, kNoOp);
    sc.fwd_recv_kv.assign(b, kNoOp);
    uint32_t prev_phase_end = kNoOp;  // last compute-stream op of the previous phase
    for (const PhasePlan& p : phases_) {
      sc.recv_q.assign(a, kNoOp);
      sc.recv_kv.assign(b, kNoOp);
      sc.merge_q.assign(a, kNoOp);
      sc.merge_kv.assign(b, kNoOp);
      std::fill(sc.compute_op.begin(), sc.compute_op.end(), kNoOp);
      sc.q_started.assign(static_cast<size_t>(a), 0);
      uint32_t last_compute_stream = kNoOp;
      // Local (slot 0) data is ready after the all-to-all in, or (backward after a forward)
      // once the forward is done on this rank: LSE and D need the final O of slot 0.
      uint32_t local_dep = prev_phase_end;
      Op base;
      base.phase = p.phase;
      base.head_begin = static_cast<int32_t>(u * heads_);
      base.head_count = static_cast<int32_t>(heads_);
      if (U_ > 1) {
        Op op = base;
        op.kind = OpKind::kAllToAll;
        op.stream = StreamId::kCollective;
        op.a2a = A2ADirection::kSeqToHeads;
        op.group = static_cast<int32_t>(m);
        op.q_shard = op.kv_shard = static_cast<int32_t>(m);
        op.tensors = p.a2a_in_tensors;
        op.bytes = p.a2a_in_bytes;
        local_dep = prev_phase_end == kNoOp ? prog.Add(op) : prog.Add(op, {prev_phase_end});
      }
      for (size_t t = 0; t < p.steps.size(); ++t) {
        EmitStep(prog, p, static_cast<int32_t>(t), m, u, base, local_dep, sc, last_compute_stream);
      }
      if (U_ > 1) {
        Op op = base;
        op.kind = OpKind::kAllToAll;
        op.stream = StreamId::kCollective;
        op.a2a = A2ADirection::kHeadsToSeq;
        op.group = static_cast<int32_t>(m);
        op.q_shard = op.kv_shard = static_cast<int32_t>(m);
        op.tensors = p.a2a_out_tensors;
        op.bytes = p.a2a_out_bytes;
        last_compute_stream =
            last_compute_stream == kNoOp ? prog.Add(op) : prog.Add(op, {last_compute_stream});
      }
      if (p.phase == Phase::kForward) {
        sc.fwd_recv_q = sc.recv_q;
        sc.fwd_recv_kv = sc.recv_kv;
      }
      prev_phase_end = last_compute_stream;
    }
  }

  void EmitStep(RankProgram& prog, const PhasePlan& p, int32_t t, int64_t m, int64_t u,
                const Op& base, uint32_t local_dep, RankScratch& sc, uint32_t& last_cs) const {
    const MeshStep& st = p.steps[static_cast<size_t>(t)];
    const int32_t b = static_cast<int32_t>(shape_.b);
    auto add = [&](const Op& op) {
      const uint32_t idx = prog.Add(op, sc.deps);
      sc.deps.clear();
      return idx;
    };
    auto dep = [&](uint32_t idx) {
      if (idx != kNoOp) sc.deps.push_back(idx);
    };
    sc.deps.clear();
    // 1. Shift: forward slot (k-1) to the send peer, receive slot k from the recv peer.
    if (st.shift != ShiftKind::kNone) {
      const bool is_q = st.shift == ShiftKind::kQ;
      const int32_t k = st.shift_slot;
      Op send = base;
      send.kind = OpKind::kSend;
      send.stream = StreamId::kSend;
      send.step = t;
      send.tag = MakeTag(p.phase, is_q ? kQShift : kKvShift, t, k);
      send.tensors = is_q ? p.q_shift_tensors : p.kv_shift_tensors;
      send.bytes = is_q ? p.q_shift_bytes : p.kv_shift_bytes;
      Op recv = send;
      recv.kind = OpKind::kRecv;
      recv.stream = StreamId::kRecv;
      if (is_q) {
        send.peer = Canonical(mesh::QSendPeer(shape_, m), u);
        send.q_shard = sc.q_slot[static_cast<size_t>(k - 1)];
        recv.peer = Canonical(mesh::QRecvPeer(shape_, m), u);
        recv.q_shard = sc.q_slot[static_cast<size_t>(k)];
        dep(k - 1 == 0 ? local_dep : sc.recv_q[static_cast<size_t>(k - 1)]);
      } else {
        send.peer = Canonical(mesh::KvSendPeer(shape_, m), u);
        send.kv_shard = sc.kv_slot[static_cast<size_t>(k - 1)];
        recv.peer = Canonical(mesh::KvRecvPeer(shape_, m), u);
        recv.kv_shard = sc.kv_slot[static_cast<size_t>(k)];
        dep(k - 1 == 0 ? local_dep : sc.recv_kv[static_cast<size_t>(k - 1)]);
      }
      add(send);
      const uint32_t r = add(recv);
      (is_q ? sc.recv_q : sc.recv_kv)[static_cast<size_t>(k)] = r;
    }
    // 2. Partial sends: deps on the line's computes and the merge of the incoming partial.
    for (const int32_t k : st.q_partial_sends) {
      Op send = base;
      send.kind = OpKind::kSend;
      send.stream = StreamId::kSend;
      send.step = t;
      send.tag = MakeTag(p.phase, kQPartial, t, k);
      send.tensors = p.q_partial_tensors;
      send.bytes = p.q_partial_bytes;
      send.peer = Canonical(mesh::QSendPeer(shape_, m), u);
      send.q_shard = sc.q_slot[static_cast<size_t>(k)];
      for (int32_t l = 0; l < b; ++l) dep(sc.compute_op[static_cast<size_t>(k) * b + l]);
      dep(sc.merge_q[static_cast<size_t>(k)]);
      add(send);
    }
    for (const int32_t l : st.kv_partial_sends) {
      Op send = base;
      send.kind = OpKind::kSend;
      send.stream = StreamId::kSend;
      send.step = t;
      send.tag = MakeTag(p.phase, kKvPartial, t, l);
      send.tensors = p.kv_partial_tensors;
      send.bytes = p.kv_partial_bytes;
      send.peer = Canonical(mesh::KvSendPeer(shape_, m), u);
      send.kv_shard = sc.kv_slot[static_cast<size_t>(l)];
      for (int64_t k = 0; k < shape_.a; ++k) dep(sc.compute_op[static_cast<size_t>(k) * b + l]);
      dep(sc.merge_kv[static_cast<size_t>(l)]);
      add(send);
    }
    // 3. Computes (blocks without unmasked pairs are skipped; their shifts stay).
    for (const mesh::LocalBlock& blk : st.compute) {
      const size_t idx = static_cast<size_t>(blk.q) * b + blk.kv;
      const BlockWork& work = sc.work[idx];
      const int64_t pairs = work.pairs;
      if (pairs == 0) continue;
      Op op = base;
      op.kind = OpKind::kCompute;
      op.stream = StreamId::kCompute;
      op.step = t;
      op.q_shard = sc.q_slot[static_cast<size_t>(blk.q)];
      op.kv_shard = sc.kv_slot[static_cast<size_t>(blk.kv)];
      op.flops = ctx_.ForwardFlops(pairs, heads_) * p.flops_factor;
      op.cut_rows_per_pair = static_cast<float>(work.CutRowsPerPair());
      // A Q slot's blocks after its first merge their partials (ring_pass.h).
      uint8_t& started = sc.q_started[static_cast<size_t>(blk.q)];
      if (started) op.bytes = p.block_partial_bytes;
      started = 1;
      if (blk.q == 0 || blk.kv == 0) dep(local_dep);
      dep(sc.recv_q[static_cast<size_t>(blk.q)]);
      dep(sc.recv_kv[static_cast<size_t>(blk.kv)]);
      if (p.cached) {  // Q and KV of the slot came with the forward's shifts
        dep(sc.fwd_recv_q[static_cast<size_t>(blk.q)]);
        dep(sc.fwd_recv_kv[static_cast<size_t>(blk.kv)]);
      }
      sc.compute_op[idx] = last_cs = add(op);
    }
    // 4. Partials the recv peer sent this step (its slot k is our slot k+1), merged on arrival.
    auto receive = [&](bool is_q, int32_t k) {
      const int64_t n = is_q ? shape_.a : shape_.b;
      const int32_t slot = static_cast<int32_t>((k + 1) % n);
      Op recv = base;
      recv.kind = OpKind::kRecv;
      recv.stream = StreamId::kRecv;
      recv.step = t;
      recv.tag = MakeTag(p.phase, is_q ? kQPartial : kKvPartial, t, k);
      recv.tensors = is_q ? p.q_partial_tensors : p.kv_partial_tensors;
      recv.bytes = is_q ? p.q_partial_bytes : p.kv_partial_bytes;
      if (is_q) {
        recv.peer = Canonical(mesh::QRecvPeer(shape_, m), u);
        recv.q_shard = sc.q_slot[static_cast<size_t>(slot)];
      } else {
        recv.peer = Canonical(mesh::KvRecvPeer(shape_, m), u);
        recv.kv_shard = sc.kv_slot[static_cast<size_t>(slot)];
      }
      const uint32_t r = add(recv);
      Op merge = recv;
      merge.kind = OpKind::kMerge;
      merge.stream = StreamId::kCompute;
      merge.peer = -1;
      merge.tag = 0;
      merge.bytes = 0;
      dep(r);
      const uint32_t mi = add(merge);
      (is_q ? sc.merge_q : sc.merge_kv)[static_cast<size_t>(slot)] = mi;
      last_cs = mi;
    };
    for (const int32_t k : st.q_partial_sends) receive(true, k);
    for (const int32_t l : st.kv_partial_sends) receive(false, l);
  }

  const PlanContext& ctx_;
  const SchemeParams& params_;
  const std::vector<RankDim>& dims_;
  int64_t U_ = 1;
  MeshShape shape_;
  int64_t heads_ = 1;
  std::vector<PhasePlan> phases_;
};

}  // namespace

// The proof. Rank u + U*m runs mesh rank m = a*G + p (q coordinate p < a, kv coordinate G < b)
// on heads u*H/U ..; the expansion above reads m and u only through
//   - the peers (QSendPeer and the like, through Canonical), the all-to-all's group (m) and the
//     heads (which the replay does not read), and
//   - the work of local block (k, l): Work(QSlotShard(m, k), KvSlotShard(m, l)) (assignment.h:
//     Q#k = a*G + (p + k) mod a, KV#l = (m + l*a) mod n, n = a*b);
// everything else (the greedy steps, message sizes, flops per pair) is the same for every rank.
// A translation along ulysses changes u alone: peers u + U*m' move with it, groups are kept and
// their members rotate cyclically. Along q by s: m' = a*G + (p + s) mod a, whose Q ring
// neighbours are the translated neighbours (the ring runs inside the Q group, mod a) and whose
// KV ring (m -> m - a mod n) keeps p; Q#k of m' is pi(Q#k of m) and KV#l of m' is pi(KV#l of m)
// for the one permutation pi(a*H + r) = a*H + (r + s) mod a of the shards. Along kv by t:
// m' = m + a*t mod n, likewise with pi(x) = x + a*t mod n. So every local block of m' is the
// image of m's under one permutation applied to both of its shards, and its work is the same
// when blocks are uniform or depend only on i == j, which a permutation keeps.
Status MeshTileTranslationInvariance(const PlanContext& ctx, const SchemeParams& params,
                                     int64_t u_degree) {
  const Workload& w = ctx.workload;
  if (u_degree < 1 || ctx.num_ranks % u_degree != 0)
    return Status::Invalid("the Ulysses degree does not divide the ranks");
  return BlocksEqualInWork(
      ShardLayout{params.layout, w.seq_len, ctx.num_ranks / u_degree, u_degree}, w.mask);
}

Result<Schedule> ExpandMeshTiles(const PlanContext& ctx, const SchemeParams& params,
                                 const std::vector<RankDim>& dims, int64_t u_degree) {
  return MeshExpander(ctx, params, dims, u_degree).Run();
}

}  // namespace meshplan::planner::schemes
