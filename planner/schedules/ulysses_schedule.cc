// Ulysses (DeepSpeed-Ulysses; docs/schedules.md): all-to-all sequence -> heads, one attention
// block over the whole sequence for Hq/U heads, all-to-all back. It is the head-ring schedule
// with a ring of one rank; the compute layout is one contiguous shard cut into U sub-shards.
#include "planner/schedules/common.h"
#include "planner/schedules/expand.h"

namespace meshplan::planner {

Result<Schedule> ExpandUlysses(const PlanContext& ctx, const SchemeParams& params) {
  const int64_t u = params.ulysses;
  const ShardLayout layout{Layout::kContiguous, ctx.workload.seq_len, 1, u};
  MESHPLAN_RETURN_IF_ERROR(sched::CheckGrid(ctx, params, layout, u));
  return sched::ExpandHeadRing(ctx, params, layout, u, /*r=*/1, /*w=*/1);
}

}  // namespace meshplan::planner
