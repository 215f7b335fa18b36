#include "planner/evaluate_plan.h"

#include "core/cost/kernel_time.h"

namespace meshplan::planner {

Estimate EvaluatePlan(const PlanContext& ctx, const Strategy& strategy,
                      const SchemeParams& params) {
  Estimate e = strategy.Evaluate(ctx, params);
  if (!e.valid) return e;
  e.framework_overhead_s = FrameworkOverheadSeconds(ctx.topology, ctx.workload.pass);
  FinishTime(e);  // the lag-free time first: the lag can grow with it
  e.shared_device_lag_s =
      SharedDeviceEndLagSeconds(ctx.topology.gpu, e.time_s - e.framework_overhead_s);
  FinishTime(e);
  return e;
}

}  // namespace meshplan::planner
