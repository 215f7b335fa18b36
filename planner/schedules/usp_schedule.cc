// USP (Ulysses U x Ring R; docs/schedules.md): all-to-all over the U ranks sharing a ring
// coordinate, then a ring over the R ranks sharing a Ulysses index (heads [u*Hq/U, (u+1)*Hq/U)),
// then all-to-all back. It is the head-ring schedule with a single window (w = R).
#include "planner/schedules/common.h"
#include "planner/schedules/expand.h"

namespace meshplan::planner {

Result<Schedule> ExpandUsp(const PlanContext& ctx, const SchemeParams& params) {
  const int64_t u = params.ulysses, r = params.ring;
  if (u < 1 || r < 1) return Status::Invalid("usp needs ulysses >= 1 and ring >= 1");
  const ShardLayout layout{params.layout, ctx.workload.seq_len, r, u};
  MESHPLAN_RETURN_IF_ERROR(sched::CheckGrid(ctx, params, layout, u));
  return sched::ExpandHeadRing(ctx, params, layout, u, r, /*w=*/r);
}

}  // namespace meshplan::planner
