// The head-parallel ring family: Ulysses, USP and LoongTrain are one pattern with different
// ring shapes (an all-to-all over U ranks around no ring, a ring of R, or a double ring of
// cp/w windows of w). Their strategies validate their own parameters and share this estimate,
// as their expansions share one engine (planner/schedules/common.h, ExpandHeadRing).
#pragma once

#include "core/layout.h"
#include "core/plan.h"
#include "planner/context.h"
#include "planner/estimate.h"

namespace meshplan::planner::schemes {

// REQUIRES: p is a valid ulysses, usp or loongtrain plan and layout its compute layout
// (R shards of the sequence, subdivided U ways).
Estimate HeadRingEstimate(const PlanContext& ctx, const SchemeParams& p, const ShardLayout& layout);

}  // namespace meshplan::planner::schemes
