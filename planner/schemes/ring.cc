// Ring-Attention: KV shards travel a ring of all P ranks (docs/schemes.md).
#include "planner/compute_model.h"
#include "planner/schemes/common.h"
#include "planner/schemes/patterns.h"
#include "planner/schemes/strategies.h"
#include "planner/schedules/expand.h"

namespace meshplan::planner::schemes {

std::vector<SchemeParams> RingStrategy::Enumerate(const PlanContext& ctx) const {
  SchemeParams p;
  p.scheme = Scheme::kRing;
  p.ring = ctx.num_ranks;
  std::vector<SchemeParams> out;
  AddVariants(ctx, p, SearchLayouts(ctx.workload.mask, /*every_layout=*/true), Placements::kCanonical, &out);
  return out;
}

Estimate RingStrategy::Evaluate(const PlanContext& ctx, const SchemeParams& p) const {
  const int64_t ranks = ctx.num_ranks;
  if (std::string why = WholeClusterProblem(ctx, p, "ring"); !why.empty()) return Invalid(p, why);
  const ShardLayout layout{p.layout, ctx.workload.seq_len, ranks, 1};

  Estimate e = ValidEstimate(p);
  const Workload& w = ctx.workload;
  const ShardBytes& s = ctx.shard;
  const Placement placement(p.RankDims(), p.placement);
  const std::vector<int64_t>& pairs = ctx.RowPairsFor(layout);
  SetFlops(e, ctx, pairs, w.q_heads);

  const double fwd_flops_max = e.flops_max / PassFlopsFactor(w.pass);
  const double step_s = KernelSeconds(ctx.topology.gpu, w.dtype, fwd_flops_max / ranks,
                                      layout.KernelBlockTokens(), 1);
  Traffic traffic(ranks, ctx.topology.num_levels());
  double fwd_bytes = 0, bwd_bytes = 0;
  if (HasForward(w.pass)) {
    fwd_bytes = RingPass(e, ctx, placement, 0, Phase::kForward, false, step_s, traffic);
  }
  if (HasBackward(w.pass)) {
    bwd_bytes = RingPass(e, ctx, placement, 0, Phase::kBackward, p.cache_forward, step_s, traffic);
  }
  SetTraffic(e, traffic, fwd_bytes, bwd_bytes);
  // Buffers: KV being used + KV arriving; fp32 O accumulator; backward adds dK,dV in and out
  // and the dQ accumulator. Cache keeps the P-1 other KV shards from the forward.
  SetMemory(e, ctx, 2 * s.kv + s.o_partial + s.lse,
            (p.cache_forward ? 0.0 : 2 * s.kv) + 2 * s.dkv_partial + s.dq_partial,
            (ranks - 1) * s.kv);
  FinishTime(e);
  return e;
}

Result<Schedule> RingStrategy::Expand(const PlanContext& ctx, const SchemeParams& p) const {
  return ExpandRing(ctx, p);
}

}  // namespace meshplan::planner::schemes
