// The head-parallel ring family: one pattern with different ring shapes (an all-to-all over U ranks
// around no ring, a ring of R, or a double ring of cp/w windows of w). Their strategies validate
// their own parameters and share this estimate and this expansion, so that the family's model and
// schedule cannot fork.
#pragma once

#include <cstdint>
#include <vector>

#include "core/plan/plan.h"
#include "core/plan/schedule.h"
#include "core/sequence/layout.h"
#include "planner/context.h"
#include "planner/estimate.h"

namespace meshplan::planner::schemes {

// REQUIRES: p is a valid plan of the family, dims its rank grid (its strategy's RankDims(p)) and
// layout its compute layout (R shards of the sequence, subdivided U ways); double_ring: the ring
// is a double ring over rank-grid dimensions 1 (inner) and 2 (outer), else a plain ring over
// dimension 1 (or none, R = 1).
Estimate HeadRingEstimate(const PlanContext& ctx, const SchemeParams& p,
                          const std::vector<RankDim>& dims, const ShardLayout& layout,
                          bool double_ring);

// Head-parallel (Ulysses degree u) x double-ring (r ring ranks in r/w windows of w) schedule:
// No ring is r = 1, a single ring w = r. Rank = h + u*rho with ring rank rho = i + w*o (inner
// position i, window o); `layout` has r shards subdivided u times. Per pass: all-to-all in (group:
// the u ranks of rho), the double ring over the r ranks of one head index, all-to-all out.
// docs/schedules.md describes every op.
// REQUIRES: sched::CheckGrid passed; w >= 1 divides r.
Result<Schedule> ExpandHeadRing(const PlanContext& ctx, const SchemeParams& params,
                                const ShardLayout& layout, int64_t u, int64_t r, int64_t w);

}  // namespace meshplan::planner::schemes
