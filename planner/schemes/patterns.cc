#include "planner/schemes/patterns.h"

#include <algorithm>
#include <string>

#include "planner/mesh/greedy.h"
#include "planner/schemes/common.h"

namespace meshplan::planner::schemes {
namespace {

const char* PhaseLabel(Phase phase) { return phase == Phase::kForward ? "fwd" : "bwd"; }

// Hops of a reduce chain over a group of n ranks (docs/schemes.md, "Reduce chains").
int64_t ChainHops(ReduceChain chain, int64_t n) {
  if (n <= 1) return 0;
  return chain == ReduceChain::kOwnerLast ? n - 1 : n;
}

}  // namespace

double UlyssesIn(Estimate& e, const PlanContext& ctx, const Placement& placement, int dim,
                 Phase phase, bool cache, Traffic& traffic) {
  const int64_t u = placement.DimSize(dim);
  if (u <= 1) return 0.0;
  const ShardBytes& s = ctx.shard;
  double payload;
  std::string what;
  if (phase == Phase::kForward) {
    payload = s.q + s.kv;
    what = "Q,K,V";
  } else if (cache) {
    payload = s.q;
    what = "dO";
  } else {
    payload = s.q + s.kv + s.q + s.lse;
    what = "Q,K,V,dO,D";
  }
  AddExposed(e, std::string(PhaseLabel(phase)) + " all-to-all " + what + " (seq->heads)",
             ctx.comm->AllToAll(placement, dim, payload, &traffic));
  return payload * static_cast<double>(u - 1) / static_cast<double>(u);
}

double UlyssesOut(Estimate& e, const PlanContext& ctx, const Placement& placement, int dim,
                  Phase phase, Traffic& traffic) {
  const int64_t u = placement.DimSize(dim);
  if (u <= 1) return 0.0;
  const ShardBytes& s = ctx.shard;
  const double payload = phase == Phase::kForward ? s.q : s.q + s.kv;
  AddExposed(e, std::string(PhaseLabel(phase)) +
                    (phase == Phase::kForward ? " all-to-all O (heads->seq)" : " all-to-all dQ,dK,dV (heads->seq)"),
             ctx.comm->AllToAll(placement, dim, payload, &traffic));
  return payload * static_cast<double>(u - 1) / static_cast<double>(u);
}

double RingPass(Estimate& e, const PlanContext& ctx, const Placement& placement, int dim, Phase phase,
                bool cache, double step_compute_s, Traffic& traffic) {
  const int64_t r = placement.DimSize(dim);
  const ShardBytes& s = ctx.shard;
  if (phase == Phase::kForward) {
    const double t_kv = ctx.comm->RingShift(placement, dim, s.kv, r - 1, &traffic);
    AddPipeline(e, "fwd ring step (KV shift)", r, step_compute_s, t_kv);
    return static_cast<double>(r - 1) * s.kv;
  }
  const double t_kv = cache ? 0.0 : ctx.comm->RingShift(placement, dim, s.kv, r - 1, &traffic);
  const double t_dkv = ctx.comm->RingShift(placement, dim, s.dkv_partial, r - 1, &traffic);
  // The dK,dV chain runs one step behind the KV ring; its last hop follows the last block.
  AddPipeline(e, cache ? "bwd ring step (dK,dV hop)" : "bwd ring step (KV shift + dK,dV hop)", r,
              step_compute_s * kBackwardFlopsFactor, t_kv + t_dkv);
  AddExposed(e, "bwd last dK,dV hop", r > 1 ? t_dkv : 0.0);
  return static_cast<double>(r - 1) * ((cache ? 0.0 : s.kv) + s.dkv_partial);
}

double DoubleRingPass(Estimate& e, const PlanContext& ctx, const Placement& placement, int inner_dim,
                      int outer_dim, Phase phase, bool cache, double step_compute_s, Traffic& traffic) {
  const int64_t w = placement.DimSize(inner_dim), windows = placement.DimSize(outer_dim);
  const ShardBytes& s = ctx.shard;
  const bool fwd = phase == Phase::kForward;
  const double msg = fwd ? s.kv : (cache ? 0.0 : s.kv) + s.dkv_partial;
  const double step_s = step_compute_s * (fwd ? 1.0 : kBackwardFlopsFactor);
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
                const Placement& placement, int q_dim, int kv_dim, Phase phase,
                double block_compute_s, Traffic& traffic) {
  const int64_t a = placement.DimSize(q_dim), b = placement.DimSize(kv_dim);
  const ShardBytes& s = ctx.shard;
  const bool fwd = phase == Phase::kForward;
  const bool cache = params.cache_forward;
  const double q_msg = fwd ? s.q : (cache ? s.q : 2 * s.q) + 2 * s.lse;
  const double kv_msg = fwd ? s.kv : (cache ? 0.0 : s.kv);
  const double qp_msg = fwd ? s.o_partial + s.lse : s.dq_partial;
  const double kvp_msg = fwd ? 0.0 : s.dkv_partial;
  const int64_t ca = ChainHops(params.reduce_chain, a);
  const int64_t cb = fwd ? 0 : ChainHops(params.reduce_chain, b);

  CommModel& comm = *ctx.comm;
  const double t_q = comm.RingShift(placement, q_dim, q_msg, a - 1, &traffic);
  const double t_kv = kv_msg > 0 ? comm.RingShift(placement, kv_dim, kv_msg, b - 1, &traffic) : 0.0;
  const double t_qp = comm.RingShift(placement, q_dim, qp_msg, ca, &traffic);
  const double t_kvp = kvp_msg > 0 ? comm.RingShift(placement, kv_dim, kvp_msg, cb, &traffic) : 0.0;
  const bool shared = a > 1 && b > 1 &&
                      comm.BottleneckLevel(placement, q_dim, q_msg) ==
                          comm.BottleneckLevel(placement, kv_dim, std::max(kv_msg, kvp_msg));

  mesh::GreedyOptions options;
  options.a = a;
  options.b = b;
  options.phase = phase;
  options.chain = params.reduce_chain;
  options.kv_present = !fwd && cache;
  const double block_s = block_compute_s * (fwd ? 1.0 : kBackwardFlopsFactor);
  // Costs steer the greedy's hold-back decisions; tiny positive floors keep ratios defined.
  options.costs = {std::max(block_s, 1e-12), std::max(t_q, 1e-12), std::max(t_kv, 1e-12),
                   std::max(t_qp, 1e-12), std::max(t_kvp, 1e-12)};
  const std::vector<mesh::MeshStep> steps = mesh::GreedySchedule(options);

  const std::string label = std::string(PhaseLabel(phase)) + " mesh step";
  for (size_t i = 0; i < steps.size(); ++i) {
    const mesh::MeshStep& step = steps[i];
    const double compute = static_cast<double>(step.compute.size()) * block_s;
    const double q_comm = (step.shift == mesh::ShiftKind::kQ ? t_q : 0.0) +
                          static_cast<double>(step.q_partial_sends.size()) * t_qp;
    const double kv_comm = (step.shift == mesh::ShiftKind::kKV ? t_kv : 0.0) +
                           static_cast<double>(step.kv_partial_sends.size()) * t_kvp;
    const double comm_s = shared ? q_comm + kv_comm : std::max(q_comm, kv_comm);
    if (!e.stages.empty() && e.stages.back().label == label && e.stages.back().compute_s == compute &&
        e.stages.back().comm_s == comm_s) {
      ++e.stages.back().count;  // fold identical consecutive steps
    } else {
      e.stages.push_back({label, compute, comm_s, true, 1});
    }
  }
  return static_cast<double>(a - 1) * q_msg + static_cast<double>(b - 1) * kv_msg +
         static_cast<double>(ca) * qp_msg + static_cast<double>(cb) * kvp_msg;
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
  AddCompute(e, "bwd tile compute", compute_s * kBackwardFlopsFactor);
  AddExposed(e, "bwd reduce-scatter dQ", comm.RingCollective(placement, q_dim, s.dq_partial, &traffic));
  AddExposed(e, "bwd reduce-scatter dK,dV", comm.RingCollective(placement, kv_dim, s.dkv_partial, &traffic));
  return static_cast<double>(a - 1) * (q_side + s.dq_partial) +
         static_cast<double>(b - 1) * ((cache ? 0.0 : s.kv) + s.dkv_partial);
}

}  // namespace meshplan::planner::schemes
