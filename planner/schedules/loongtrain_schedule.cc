// LoongTrain (head parallel hp x double ring over cp ranks, inner window w; docs/schedules.md):
// like USP, but the ring is a double ring: cp/w rounds of w-1 inner shifts each, with the outer
// shift of the next round's KV overlapped with the inner rotation.
#include "planner/schedules/common.h"
#include "planner/schedules/expand.h"

namespace meshplan::planner {

Result<Schedule> ExpandLoongTrain(const PlanContext& ctx, const SchemeParams& params) {
  const int64_t u = params.ulysses, cp = params.ring, w = params.window;
  if (u < 1 || cp < 1 || w < 1) return Status::Invalid("loongtrain needs head, cp and window >= 1");
  if (cp % w != 0) {
    return Status::Invalid("loongtrain window " + std::to_string(w) + " does not divide cp " +
                           std::to_string(cp));
  }
  const ShardLayout layout{params.layout, ctx.workload.seq_len, cp, u};
  MESHPLAN_RETURN_IF_ERROR(sched::CheckGrid(ctx, params, layout, u));
  return sched::ExpandHeadRing(ctx, params, layout, u, cp, w);
}

}  // namespace meshplan::planner
