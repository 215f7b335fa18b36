// Schedule expansion of every scheme: plan parameters -> per-rank programs (core/schedule.h).
// Each function assumes the strategy's Evaluate() found the parameters valid.
//
// Common rules for all expansions:
// - Schedule::layout is the compute layout; rank r starts with input sub-shard r of it, holding
//   Q, K, V (and for the backward dO, O, LSE of the forward) of those tokens, all heads.
// - Pass fwd emits forward ops; bwd emits backward ops only (assuming the forward's O and LSE
//   are present at their owners); fwd+bwd emits both, the backward after the forward.
// - Compute ops skip blocks with no unmasked pair; flops = ForwardFlops(pairs, heads), times
//   kBackwardFlopsFactor for backward blocks.
// - Bytes of every message follow the strategy's analytic model exactly (ShardBytes), so the
//   sum over a rank's sends equals Estimate::bytes_per_rank (tests check this).
#pragma once

#include "core/schedule.h"
#include "core/status.h"
#include "planner/context.h"

namespace meshplan::planner {

Result<Schedule> ExpandRing(const PlanContext& ctx, const SchemeParams& params);
Result<Schedule> ExpandAllGatherKV(const PlanContext& ctx, const SchemeParams& params);
Result<Schedule> ExpandUlysses(const PlanContext& ctx, const SchemeParams& params);
Result<Schedule> ExpandUsp(const PlanContext& ctx, const SchemeParams& params);
Result<Schedule> ExpandLoongTrain(const PlanContext& ctx, const SchemeParams& params);
Result<Schedule> ExpandAttention2D(const PlanContext& ctx, const SchemeParams& params);
Result<Schedule> ExpandMesh(const PlanContext& ctx, const SchemeParams& params);
Result<Schedule> ExpandMeshUlysses(const PlanContext& ctx, const SchemeParams& params);

}  // namespace meshplan::planner
