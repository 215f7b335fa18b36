// ATTENTION2D: each rank computes an a x b tile of the attention matrix (the Mesh assignment),
// moving Q and K,V with all-gathers and partial outputs with reduce-scatters (docs/schemes.md).
#include "planner/compute_model.h"
#include "planner/schedules/expand.h"
#include "planner/schemes/common.h"
#include "planner/schemes/patterns.h"
#include "planner/schemes/strategies.h"

namespace meshplan::planner::schemes {

std::vector<SchemeParams> Attention2DStrategy::Enumerate(const PlanContext& ctx) const {
  std::vector<SchemeParams> out;
  SchemeParams p;
  p.scheme = Scheme::kAttention2D;
  AddTileCandidates(ctx, p, ctx.num_ranks, &out);
  return out;
}

Estimate Attention2DStrategy::Evaluate(const PlanContext& ctx, const SchemeParams& p) const {
  const Workload& w = ctx.workload;
  const int64_t ranks = ctx.num_ranks;
  if (p.tile_a < 1 || p.tile_b < 1 || p.tile_a * p.tile_b != ranks) {
    return Invalid(p, "tile " + std::to_string(p.tile_a) + " x " + std::to_string(p.tile_b) +
                          " does not cover the " + std::to_string(ranks) + " GPUs (a*b must equal P)");
  }
  const ShardLayout layout{p.layout, w.seq_len, ranks, 1};
  if (std::string why = LayoutOrPlacementProblem(p, layout, w.mask); !why.empty()) return Invalid(p, why);

  Estimate e = ValidEstimate(p);
  const ShardBytes& s = ctx.shard;
  const int64_t a = p.tile_a, b = p.tile_b;
  const Placement placement(p.RankDims(), p.placement);
  SetFlops(e, ctx, ctx.TilePairsFor(layout, a), w.q_heads);
  const double compute_s = KernelSeconds(ctx.topology.gpu, w.dtype, e.flops_max / PassFlopsFactor(w.pass),
                                         layout.KernelBlockTokens(), a * b);
  Traffic traffic(ranks, ctx.topology.num_levels());
  double fwd_bytes = 0, bwd_bytes = 0;
  if (HasForward(w.pass)) {
    fwd_bytes = Attention2DPass(e, ctx, placement, 0, 1, Phase::kForward, false, compute_s, traffic);
  }
  if (HasBackward(w.pass)) {
    bwd_bytes = Attention2DPass(e, ctx, placement, 0, 1, Phase::kBackward, p.cache_forward, compute_s, traffic);
  }
  SetTraffic(e, traffic, fwd_bytes, bwd_bytes);
  // Gathered a Q shards and b KV shards; a partial (O, LSE) accumulators; the backward gathers
  // dO, LSE, D too and holds a partial dQ and b partial dK,dV before the reduce-scatters.
  SetMemory(e, ctx, (a - 1) * s.q + (b - 1) * s.kv + a * (s.o_partial + s.lse),
            (a - 1) * ((p.cache_forward ? 0.0 : s.q) + s.q + 2 * s.lse) +
                (p.cache_forward ? 0.0 : (b - 1) * s.kv) + a * s.dq_partial + b * s.dkv_partial,
            (a - 1) * s.q + (b - 1) * s.kv);
  FinishTime(e);
  return e;
}

Result<Schedule> Attention2DStrategy::Expand(const PlanContext& ctx, const SchemeParams& p) const {
  return ExpandAttention2D(ctx, p);
}

}  // namespace meshplan::planner::schemes
