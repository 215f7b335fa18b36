// DeepSpeed-Ulysses: all-to-all from sequence shards to head shards, full-sequence attention on
// Hq/P heads, all-to-all back (docs/schemes.md).
#include "planner/compute_model.h"
#include "planner/schedules/expand.h"
#include "planner/schemes/common.h"
#include "planner/schemes/patterns.h"
#include "planner/schemes/strategies.h"

namespace meshplan::planner::schemes {

std::vector<SchemeParams> UlyssesStrategy::Enumerate(const PlanContext& ctx) const {
  SchemeParams p;
  p.scheme = Scheme::kUlysses;
  p.ulysses = ctx.num_ranks;
  std::vector<SchemeParams> out;
  AddVariants(ctx, p, {Layout::kContiguous}, Placements::kCanonical, &out);
  return out;
}

Estimate UlyssesStrategy::Evaluate(const PlanContext& ctx, const SchemeParams& p) const {
  const int64_t ranks = ctx.num_ranks;
  const Workload& w = ctx.workload;
  if (p.ulysses != ranks) {
    return Invalid(p, "Ulysses degree " + std::to_string(p.ulysses) + " must equal the " +
                          std::to_string(ranks) + " GPUs");
  }
  if (std::string why = UlyssesProblem(w, ranks); !why.empty()) return Invalid(p, why);
  if (p.layout != Layout::kContiguous) return Invalid(p, "Ulysses uses the contiguous layout");
  const ShardLayout layout{Layout::kContiguous, w.seq_len, 1, ranks};
  if (std::string why = LayoutOrPlacementProblem(p, layout, w.mask); !why.empty()) return Invalid(p, why);

  Estimate e = ValidEstimate(p);
  const ShardBytes& s = ctx.shard;
  const Placement placement(p.RankDims(), p.placement);
  const int64_t heads = HeadsPerRank(w, ranks);
  // Every rank attends over the whole sequence for its heads: perfectly balanced.
  SetFlops(e, ctx, std::vector<int64_t>(ranks, ctx.counter.Total()), heads);
  const double compute_s = KernelSeconds(ctx.topology.gpu, w.dtype, e.flops_max / PassFlopsFactor(w.pass),
                                         w.seq_len, 1);
  Traffic traffic(ranks, ctx.topology.num_levels());
  double fwd_bytes = 0, bwd_bytes = 0;
  if (HasForward(w.pass)) {
    fwd_bytes += UlyssesIn(e, ctx, placement, 0, Phase::kForward, false, traffic);
    AddCompute(e, "fwd attention (Hq/P heads, full sequence)", compute_s);
    fwd_bytes += UlyssesOut(e, ctx, placement, 0, Phase::kForward, traffic);
  }
  if (HasBackward(w.pass)) {
    bwd_bytes += UlyssesIn(e, ctx, placement, 0, Phase::kBackward, p.cache_forward, traffic);
    AddCompute(e, "bwd attention", compute_s * kBackwardFlopsFactor);
    bwd_bytes += UlyssesOut(e, ctx, placement, 0, Phase::kBackward, traffic);
  }
  SetTraffic(e, traffic, fwd_bytes, bwd_bytes);
  // Head-layout copies: forward Q', K', V', O' and the fp32 accumulator; backward adds dO', D
  // and partial dQ', dK', dV' plus their final copies before the all-to-all back.
  SetMemory(e, ctx, 2 * s.q + s.kv + s.o_partial + s.lse,
            (p.cache_forward ? 0.0 : s.q + s.kv) + s.q + s.lse + s.dq_partial + s.dkv_partial + s.q + s.kv,
            2 * s.q + s.kv + s.lse);
  FinishTime(e);
  return e;
}

Result<Schedule> UlyssesStrategy::Expand(const PlanContext& ctx, const SchemeParams& p) const {
  return ExpandUlysses(ctx, p);
}

}  // namespace meshplan::planner::schemes
