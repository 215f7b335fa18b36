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

// Fills flops, bytes, memory and time of a (Ulysses +) Mesh plan: Ulysses all-to-all over
// ulysses_dim (or none when -1), the tile pass over q_dim and kv_dim, `heads` per rank.
void MeshTilePass(Estimate& e, const PlanContext& ctx, const SchemeParams& params,
                  const Placement& placement, const ShardLayout& layout, int q_dim, int kv_dim,
                  int64_t heads, int ulysses_dim, Traffic& traffic);

}  // namespace meshplan::planner::schemes
