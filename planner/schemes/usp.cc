// USP: Ulysses over U ranks x Ring over R ranks, P = U*R (docs/schemes.md).
#include "planner/schedules/expand.h"
#include "planner/schemes/common.h"
#include "planner/schemes/head_ring.h"
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

  return HeadRingEstimate(ctx, p, layout);
}

Result<Schedule> UspStrategy::Expand(const PlanContext& ctx, const SchemeParams& p) const {
  return ExpandUsp(ctx, p);
}

}  // namespace meshplan::planner::schemes
