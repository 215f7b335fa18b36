// The Mesh-Attention evaluation shared by mesh and mesh-ulysses.
#pragma once

#include <string>

#include "core/layout.h"
#include "core/plan.h"
#include "planner/comm_model.h"
#include "planner/context.h"
#include "planner/estimate.h"

namespace meshplan::planner::schemes {

// Empty when tile a x b covers `mesh_ranks`, else the reason.
std::string MeshTileProblem(const SchemeParams& params, int64_t mesh_ranks);

// Fills flops, bytes, memory and time of a mesh or mesh-ulysses plan: the Ulysses all-to-alls
// (mesh-ulysses only) around the tile pass, `heads` query heads per rank.
void MeshTilePass(Estimate& e, const PlanContext& ctx, const SchemeParams& params,
                  const Placement& placement, const ShardLayout& layout, int64_t heads, Traffic& traffic);

}  // namespace meshplan::planner::schemes
