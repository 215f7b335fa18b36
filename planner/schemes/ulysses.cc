// DeepSpeed-Ulysses: all-to-all from sequence shards to head shards, full-sequence attention on
// Hq/P heads, all-to-all back (docs/schemes.md).
#include "planner/schedules/expand.h"
#include "planner/schemes/common.h"
#include "planner/schemes/head_ring.h"
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

  return HeadRingEstimate(ctx, p, layout);
}

Result<Schedule> UlyssesStrategy::Expand(const PlanContext& ctx, const SchemeParams& p) const {
  return ExpandUlysses(ctx, p);
}

}  // namespace meshplan::planner::schemes
