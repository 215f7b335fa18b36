#include "planner/schemes/head_ring.h"

#include "planner/compute_model.h"
#include "planner/schemes/common.h"
#include "planner/schemes/patterns.h"

namespace meshplan::planner::schemes {

Estimate HeadRingEstimate(const PlanContext& ctx, const SchemeParams& p, const ShardLayout& layout) {
  const Workload& w = ctx.workload;
  const ShardBytes& s = ctx.shard;
  const int64_t u = p.ulysses;
  const int64_t r = layout.num_shards;  // ring positions (1 for Ulysses)
  const bool double_ring = p.scheme == Scheme::kLoongTrain;
  Estimate e = ValidEstimate(p);
  const Placement placement(p.RankDims(), p.placement);
  SetFlops(e, ctx, ctx.RowPairsFor(layout), HeadsPerRank(w, u));
  const double step_s = KernelSeconds(ctx.topology.gpu, w.dtype, e.flops_max / PassFlopsFactor(w.pass) / r,
                                      layout.KernelBlockTokens(), 1);
  Traffic traffic(ctx.num_ranks, ctx.topology.num_levels());
  auto ring = [&](Phase phase, bool cache) {
    if (double_ring) return DoubleRingPass(e, ctx, placement, 1, 2, phase, cache, step_s, traffic);
    if (r > 1) return RingPass(e, ctx, placement, 1, phase, cache, step_s, traffic);
    AddCompute(e, phase == Phase::kForward ? "fwd attention (full sequence, own heads)" : "bwd attention",
               step_s * (phase == Phase::kForward ? 1.0 : kBackwardFlopsFactor));
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

}  // namespace meshplan::planner::schemes
