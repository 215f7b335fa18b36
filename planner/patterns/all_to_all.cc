#include "planner/patterns/all_to_all.h"

#include <string>

namespace meshplan::planner {

double UlyssesIn(Estimate& e, const PlanContext& ctx, const Placement& placement, int dim,
                 Phase phase, bool cache, Traffic& traffic) {
  const int64_t u = placement.DimSize(dim);
  if (u <= 1) return 0.0;
  const A2APayload in = UlyssesInPayload(ctx.shard, phase, cache);
  AddExposed(e, std::string(PhaseLabel(phase)) + " all-to-all " + in.names + " (seq->heads)",
             ctx.comm->AllToAll(placement, dim, in.bytes, &traffic));
  return AllToAllSent(in.bytes, u);
}

double UlyssesOut(Estimate& e, const PlanContext& ctx, const Placement& placement, int dim,
                  Phase phase, Traffic& traffic) {
  const int64_t u = placement.DimSize(dim);
  if (u <= 1) return 0.0;
  const A2APayload out = UlyssesOutPayload(ctx.shard, phase);
  AddExposed(e, std::string(PhaseLabel(phase)) + " all-to-all " + out.names + " (heads->seq)",
             ctx.comm->AllToAll(placement, dim, out.bytes, &traffic));
  return AllToAllSent(out.bytes, u);
}

}  // namespace meshplan::planner
