// The Mesh-Attention tile pass shared by the Mesh tile family (the tile alone, or after a
// head-parallel dimension): its validity, its analytic estimate and its schedule expansion, in
// one place so that the family's members cannot fork.
#pragma once

#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/plan/plan.h"
#include "core/plan/schedule.h"
#include "core/sequence/layout.h"
#include "planner/comm_model.h"
#include "planner/context.h"
#include "planner/estimate.h"

namespace meshplan::planner::schemes {

// Empty when tile a x b covers `mesh_ranks`, else the reason.
std::string MeshTileProblem(const SchemeParams& params, int64_t mesh_ranks);

// Fills flops, bytes, memory and time of a plan of the family: the Ulysses all-to-alls (with a
// head-parallel dimension only) around the tile pass, `heads` query heads per rank.
void MeshTilePass(Estimate& e, const PlanContext& ctx, const SchemeParams& params,
                  const Placement& placement, const ShardLayout& layout, int64_t heads,
                  Traffic& traffic);

// The schedule of a plan of the family (u_degree = 1 without head parallelism) whose rank grid
// is `dims` (its strategy's RankDims(params)): the greedy step schedule of the a x b tile over
// M = P/U ranks, replayed for every rank, with the Ulysses all-to-alls around it when U > 1
// (docs/mesh-attention.md). Rank = u + U*m. Invalid sizes, layouts and placements are errors.
Result<Schedule> ExpandMeshTiles(const PlanContext& ctx, const SchemeParams& params,
                                 const std::vector<RankDim>& dims, int64_t u_degree);

// Strategy::ProveTranslationInvariance for the family (mesh_tile.cc gives the proof): Ok when
// the layout's blocks under the workload's mask are uniform or depend only on i == j
// (WorkSymmetry), else why not. ExpandMeshTiles honours PlanContext::expand_rank.
Status MeshTileTranslationInvariance(const PlanContext& ctx, const SchemeParams& params,
                                     int64_t u_degree);

}  // namespace meshplan::planner::schemes
