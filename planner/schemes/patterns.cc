#include "planner/schemes/patterns.h"

#include <algorithm>
#include <array>
#include <string>

#include "planner/mesh/greedy.h"
#include "planner/mesh/step_costs.h"
#include "planner/schemes/common.h"
#include "planner/ulysses_payload.h"

namespace meshplan::planner::schemes {
namespace {

const char* PhaseLabel(Phase phase) { return phase == Phase::kForward ? "fwd" : "bwd"; }

// Hops of a reduce chain over a group of n ranks (docs/schemes.md, "Reduce chains").
int64_t ChainHops(ReduceChain chain, int64_t n) {
  if (n <= 1) return 0;
  return chain == ReduceChain::kOwnerLast ? n - 1 : n;
}

// Appends a stage, or counts it into the previous one when it is the same stage again.
void AddFolded(Estimate& e, const std::string& label, double compute_s, double comm_s, int64_t count) {
  if (count <= 0) return;
  if (!e.stages.empty() && e.stages.back().label == label && e.stages.back().compute_s == compute_s &&
      e.stages.back().comm_s == comm_s && e.stages.back().overlapped) {
    e.stages.back().count += count;
  } else {
    e.stages.push_back({label, compute_s, comm_s, true, count});
  }
}

}  // namespace

double UlyssesIn(Estimate& e, const PlanContext& ctx, const Placement& placement, int dim,
                 Phase phase, bool cache, Traffic& traffic) {
  const int64_t u = placement.DimSize(dim);
  if (u <= 1) return 0.0;
  const A2APayload in = UlyssesInPayload(ctx.shard, phase, cache);
  AddExposed(e, std::string(PhaseLabel(phase)) + " all-to-all " + in.names + " (seq->heads)",
             ctx.comm->AllToAll(placement, dim, in.bytes, &traffic));
  return AllToAllSent(in.bytes, u);
}

double UlyssesOut(Estimate& e, const PlanContext& ctx, const Placement& placement, int dim,
                  Phase phase, Traffic& traffic) {
  const int64_t u = placement.DimSize(dim);
  if (u <= 1) return 0.0;
  const A2APayload out = UlyssesOutPayload(ctx.shard, phase);
  AddExposed(e, std::string(PhaseLabel(phase)) + " all-to-all " + out.names + " (heads->seq)",
             ctx.comm->AllToAll(placement, dim, out.bytes, &traffic));
  return AllToAllSent(out.bytes, u);
}

double RingPass(Estimate& e, const PlanContext& ctx, const Placement& placement, int dim, Phase phase,
                bool cache, bool own_shard_last, double step_compute_s, Traffic& traffic) {
  const int64_t r = placement.DimSize(dim);
  const ShardBytes& s = ctx.shard;
  if (phase == Phase::kForward) {
    const double t_kv = ctx.comm->RingShift(placement, dim, s.kv, r - 1, &traffic);
    AddPipeline(e, "fwd ring step (KV shift)", r, step_compute_s, t_kv);
    return static_cast<double>(r - 1) * s.kv;
  }
  const double t_kv = cache ? 0.0 : ctx.comm->RingShift(placement, dim, s.kv, r - 1, &traffic);
  const double t_dkv = ctx.comm->RingShift(placement, dim, s.dkv_partial, r - 1, &traffic);
  // The dK,dV chain runs one step behind the KV ring; its last hop follows the last block,
  // unless the own shard runs last (cache only): then hop k overlaps block k+1 and the last hop
  // the own block.
  AddPipeline(e, cache ? "bwd ring step (dK,dV hop)" : "bwd ring step (KV shift + dK,dV hop)", r,
              ctx.BackwardSeconds(step_compute_s, 1), t_kv + t_dkv);
  if (!(cache && own_shard_last)) AddExposed(e, "bwd last dK,dV hop", r > 1 ? t_dkv : 0.0);
  return static_cast<double>(r - 1) * ((cache ? 0.0 : s.kv) + s.dkv_partial);
}

double DoubleRingPass(Estimate& e, const PlanContext& ctx, const Placement& placement, int inner_dim,
                      int outer_dim, Phase phase, bool cache, double step_compute_s, Traffic& traffic) {
  const int64_t w = placement.DimSize(inner_dim), windows = placement.DimSize(outer_dim);
  const ShardBytes& s = ctx.shard;
  const bool fwd = phase == Phase::kForward;
  const double msg = fwd ? s.kv : (cache ? 0.0 : s.kv) + s.dkv_partial;
  const double step_s = fwd ? step_compute_s : ctx.BackwardSeconds(step_compute_s, 1);
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
  if (!fwd) AddExposed(e, "bwd last dK,dV hop", (w * windows > 1) ? std::max(t_in, t_out) : 0.0);
  return static_cast<double>(w * windows - 1) * msg;
}

double MeshPass(Estimate& e, const PlanContext& ctx, const SchemeParams& params,
                const Placement& placement, Phase phase, Traffic& traffic) {
  const int q_dim = mesh::QDim(params), kv_dim = mesh::KvDim(params);
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
  const mesh::StepTimes t = mesh::PhaseStepTimes(ctx, params, phase);
  mesh::GreedyOptions options;
  options.a = a;
  options.b = b;
  options.phase = phase;
  options.chain = params.reduce_chain;
  options.kv_present = !fwd && params.cache_forward;
  options.costs = t.Costs();
  const std::vector<mesh::MeshStep> steps = mesh::GreedySchedule(options);

  const std::string label = std::string(PhaseLabel(phase)) + " mesh step";
  for (const mesh::MeshStep& step : steps) {
    const double compute = static_cast<double>(step.compute.size()) * t.block;
    const double q_comm = (step.shift == mesh::ShiftKind::kQ ? t.q_shift : 0.0) +
                          static_cast<double>(step.q_partial_sends.size()) * t.q_partial;
    const double kv_comm = (step.shift == mesh::ShiftKind::kKV ? t.kv_shift : 0.0) +
                           static_cast<double>(step.kv_partial_sends.size()) * t.kv_partial;
    const double comm_s = t.shared_link ? q_comm + kv_comm : std::max(q_comm, kv_comm);
    if (!e.stages.empty() && e.stages.back().label == label && e.stages.back().compute_s == compute &&
        e.stages.back().comm_s == comm_s) {
      ++e.stages.back().count;  // fold identical consecutive steps
    } else {
      e.stages.push_back({label, compute, comm_s, true, 1});
    }
  }
  return static_cast<double>(a - 1) * m.q_shift + static_cast<double>(b - 1) * m.kv_shift +
         static_cast<double>(ca) * m.q_partial + static_cast<double>(cb) * m.kv_partial;
}

double Attention2DPass(Estimate& e, const PlanContext& ctx, const Placement& placement, int q_dim,
                       int kv_dim, Phase phase, bool cache, double compute_s, Traffic& traffic) {
  const int64_t a = placement.DimSize(q_dim), b = placement.DimSize(kv_dim);
  const ShardBytes& s = ctx.shard;
  CommModel& comm = *ctx.comm;
  if (phase == Phase::kForward) {
    AddExposed(e, "fwd all-gather Q", comm.RingCollective(placement, q_dim, s.q, &traffic));
    AddExposed(e, "fwd all-gather K,V", comm.RingCollective(placement, kv_dim, s.kv, &traffic));
    AddCompute(e, "fwd tile compute", compute_s);
    AddExposed(e, "fwd reduce-scatter O,LSE",
               comm.RingCollective(placement, q_dim, s.o_partial + s.lse, &traffic));
    return static_cast<double>(a - 1) * (s.q + s.o_partial + s.lse) + static_cast<double>(b - 1) * s.kv;
  }
  const double q_side = (cache ? 0.0 : s.q) + s.q + 2 * s.lse;
  AddExposed(e, cache ? "bwd all-gather dO,LSE,D" : "bwd all-gather Q,dO,LSE,D",
             comm.RingCollective(placement, q_dim, q_side, &traffic));
  if (!cache) AddExposed(e, "bwd all-gather K,V", comm.RingCollective(placement, kv_dim, s.kv, &traffic));
  AddCompute(e, "bwd tile compute", ctx.BackwardSeconds(compute_s, a * b));
  AddExposed(e, "bwd reduce-scatter dQ", comm.RingCollective(placement, q_dim, s.dq_partial, &traffic));
  AddExposed(e, "bwd reduce-scatter dK,dV", comm.RingCollective(placement, kv_dim, s.dkv_partial, &traffic));
  return static_cast<double>(a - 1) * (q_side + s.dq_partial) +
         static_cast<double>(b - 1) * ((cache ? 0.0 : s.kv) + s.dkv_partial);
}

double Attention2DOverlapPass(Estimate& e, const PlanContext& ctx, const Placement& placement, int q_dim,
                              int kv_dim, Phase phase, bool cache, double block_s, Traffic& traffic) {
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
  const bool shared = a > 1 && b > 1 &&
                      comm.BottleneckLevel(placement, q_dim, q_bytes) ==
                          comm.BottleneckLevel(placement, kv_dim, fwd || !cache ? kv_bytes : dkv_bytes);
  const double t_blk = fwd ? block_s : ctx.BackwardSeconds(block_s, 1);
  const std::string ph = PhaseLabel(phase);

  // KV-group traffic during block l of row k (the compute stream waits for it at the next block):
  // row 0 shifts K,V for block l+1 (l <= b-2); the backward's last row carries the dK+dV hop sent
  // after block l-1 (l >= 2; the hop sent after the last block is the tail below).
  // A cached backward's last row runs the own slot last (attention2d_overlap.cc): its first hop
  // is sent after step 0 and its last, the own slot's total, lands during the own block: step l
  // (l >= 1) waits for a hop and no tail is left.
  const bool own_last = !fwd && cache && b >= 2;
  const int64_t first_hop = own_last ? 1 : 2;
  auto kv_step = [&](int64_t k, int64_t l) {
    return (k == 0 && move_kv && l <= b - 2 ? t_kv : 0.0) + (!fwd && k == a - 1 && l >= first_hop ? t_dkv : 0.0);
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
    const std::string label = ph + (k == 0 ? " row 0 block (KV shift)" : " last row block (dK,dV hop)");
    // kv_step changes only at l = first_hop and l = b-1: it is constant between sorted cut points.
    std::array<int64_t, 4> cuts = {0, std::min<int64_t>(first_hop, b), std::max<int64_t>(0, b - 1), b};
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
  return static_cast<double>(a - 1) * (q_bytes + part_bytes) + static_cast<double>(b - 1) * (kv_bytes + dkv_bytes);
}

}  // namespace meshplan::planner::schemes
