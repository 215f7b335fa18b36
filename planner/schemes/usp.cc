// USP: Ulysses over U ranks x Ring over R ranks, P = U*R (docs/schemes.md).
#include "planner/compute_model.h"
#include "planner/schedules/expand.h"
#include "planner/schemes/common.h"
#include "planner/schemes/patterns.h"
#include "planner/schemes/strategies.h"

namespace meshplan::planner::schemes {

std::vector<SchemeParams> UspStrategy::Enumerate(const PlanContext& ctx) const {
  std::vector<SchemeParams> out;
  SchemeParams p;
  p.scheme = Scheme::kUsp;
  for (int64_t u : Divisors(ctx.num_ranks)) {
    if (u == 1 || u == ctx.num_ranks || !UlyssesProblem(ctx.workload, u).empty()) continue;
    p.ulysses = u;
    p.ring = ctx.num_ranks / u;
    AddVariants(ctx, p, SearchLayouts(ctx.workload.mask, false), Placements::kAll, &out);
  }
  if (out.empty()) {  // keep one candidate so the reason is shown
    p.ulysses = 2;
    p.ring = std::max<int64_t>(1, ctx.num_ranks / 2);
    p.placement = CanonicalPlacement(p.RankDims());
    out.push_back(p);
  }
  return out;
}

Estimate UspStrategy::Evaluate(const PlanContext& ctx, const SchemeParams& p) const {
  const Workload& w = ctx.workload;
  const int64_t ranks = ctx.num_ranks;
  if (ranks < 2) return Invalid(p, "USP needs at least 2 GPUs");
  if (p.ulysses < 1 || p.ring < 1 || p.ulysses * p.ring != ranks) {
    return Invalid(p, "U x R = " + std::to_string(p.ulysses) + " x " + std::to_string(p.ring) +
                          " must equal the " + std::to_string(ranks) + " GPUs");
  }
  if (std::string why = UlyssesProblem(w, p.ulysses); !why.empty()) return Invalid(p, why);
  const ShardLayout layout{p.layout, w.seq_len, p.ring, p.ulysses};
  if (std::string why = LayoutOrPlacementProblem(p, layout, w.mask); !why.empty()) return Invalid(p, why);

  Estimate e = ValidEstimate(p);
  const ShardBytes& s = ctx.shard;
  const Placement placement(p.RankDims(), p.placement);
  SetFlops(e, ctx, ctx.RowPairsFor(layout), HeadsPerRank(w, p.ulysses));
  const double step_s = KernelSeconds(ctx.topology.gpu, w.dtype,
                                      e.flops_max / PassFlopsFactor(w.pass) / p.ring,
                                      layout.KernelBlockTokens(), 1);
  Traffic traffic(ranks, ctx.topology.num_levels());
  double fwd_bytes = 0, bwd_bytes = 0;
  if (HasForward(w.pass)) {
    fwd_bytes += UlyssesIn(e, ctx, placement, 0, Phase::kForward, false, traffic);
    fwd_bytes += RingPass(e, ctx, placement, 1, Phase::kForward, false, step_s, traffic);
    fwd_bytes += UlyssesOut(e, ctx, placement, 0, Phase::kForward, traffic);
  }
  if (HasBackward(w.pass)) {
    bwd_bytes += UlyssesIn(e, ctx, placement, 0, Phase::kBackward, p.cache_forward, traffic);
    bwd_bytes += RingPass(e, ctx, placement, 1, Phase::kBackward, p.cache_forward, step_s, traffic);
    bwd_bytes += UlyssesOut(e, ctx, placement, 0, Phase::kBackward, traffic);
  }
  SetTraffic(e, traffic, fwd_bytes, bwd_bytes);
  // Head-layout copies as in Ulysses plus the ring's two KV buffers (and dK,dV in and out).
  SetMemory(e, ctx, 2 * s.q + s.kv + s.o_partial + s.lse + 2 * s.kv,
            (p.cache_forward ? 0.0 : s.q + 3 * s.kv) + s.q + s.lse + s.dq_partial + 3 * s.dkv_partial + s.q + s.kv,
            2 * s.q + s.kv + s.lse + (p.ring - 1) * s.kv);
  FinishTime(e);
  return e;
}

Result<Schedule> UspStrategy::Expand(const PlanContext& ctx, const SchemeParams& p) const {
  return ExpandUsp(ctx, p);
}

}  // namespace meshplan::planner::schemes
