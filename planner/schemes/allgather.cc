// All-gather KV (Llama 3 context parallelism): gather every K,V shard, attend locally,
// reduce-scatter dK,dV in the backward (docs/schemes.md).
#include "planner/compute_model.h"
#include "planner/schedules/expand.h"
#include "planner/schemes/common.h"
#include "planner/schemes/strategies.h"

namespace meshplan::planner::schemes {

std::vector<SchemeParams> AllGatherKVStrategy::Enumerate(const PlanContext& ctx) const {
  SchemeParams p;
  p.scheme = Scheme::kAllGatherKV;
  p.ring = ctx.num_ranks;
  std::vector<SchemeParams> out;
  AddVariants(ctx, p, SearchLayouts(ctx.workload.mask, false), Placements::kCanonical, &out);
  return out;
}

Estimate AllGatherKVStrategy::Evaluate(const PlanContext& ctx, const SchemeParams& p) const {
  const int64_t ranks = ctx.num_ranks;
  if (std::string why = WholeClusterProblem(ctx, p, "all-gather"); !why.empty()) return Invalid(p, why);
  const ShardLayout layout{p.layout, ctx.workload.seq_len, ranks, 1};

  Estimate e = ValidEstimate(p);
  const Workload& w = ctx.workload;
  const ShardBytes& s = ctx.shard;
  const Placement placement(p.RankDims(), p.placement);
  SetFlops(e, ctx, ctx.RowPairsFor(layout), w.q_heads);
  const double fwd_flops = e.flops_max / PassFlopsFactor(w.pass);
  const double compute_s = KernelSeconds(ctx.topology.gpu, w.dtype, fwd_flops, layout.KernelBlockTokens(),
                                         layout.kind == Layout::kZigzag ? 2 : 1);
  Traffic traffic(ranks, ctx.topology.num_levels());
  CommModel& comm = *ctx.comm;
  double fwd_bytes = 0, bwd_bytes = 0;
  if (HasForward(w.pass)) {
    AddExposed(e, "fwd all-gather K,V", comm.RingCollective(placement, 0, s.kv, &traffic));
    AddCompute(e, "fwd attention on gathered K,V", compute_s);
    fwd_bytes = (ranks - 1) * s.kv;
  }
  if (HasBackward(w.pass)) {
    if (!p.cache_forward) {
      AddExposed(e, "bwd all-gather K,V", comm.RingCollective(placement, 0, s.kv, &traffic));
    }
    AddCompute(e, "bwd attention", compute_s * kBackwardFlopsFactor);
    AddExposed(e, "bwd reduce-scatter dK,dV", comm.RingCollective(placement, 0, s.dkv_partial, &traffic));
    bwd_bytes = (ranks - 1) * ((p.cache_forward ? 0.0 : s.kv) + s.dkv_partial);
  }
  SetTraffic(e, traffic, fwd_bytes, bwd_bytes);
  // Full-length K,V (P shards) during attention; the backward also holds P partial dK,dV.
  SetMemory(e, ctx, (ranks - 1) * s.kv + s.o_partial + s.lse,
            (p.cache_forward ? 0.0 : (ranks - 1) * s.kv) + ranks * s.dkv_partial + s.dq_partial,
            (ranks - 1) * s.kv);
  FinishTime(e);
  return e;
}

Result<Schedule> AllGatherKVStrategy::Expand(const PlanContext& ctx, const SchemeParams& p) const {
  return ExpandAllGatherKV(ctx, p);
}

}  // namespace meshplan::planner::schemes
