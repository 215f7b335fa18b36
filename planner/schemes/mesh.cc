// Mesh-Attention: a x b tiles, p2p ring shifts overlapped with compute by the greedy step
// schedule (docs/mesh-attention.md, docs/schemes.md). Mesh-Ulysses (mesh_ulysses.cc) reuses
// MeshTilePass for its mesh part.
#include "planner/schemes/mesh_common.h"

#include "planner/compute_model.h"
#include "planner/schedules/expand.h"
#include "planner/schemes/common.h"
#include "planner/schemes/patterns.h"
#include "planner/schemes/strategies.h"

namespace meshplan::planner::schemes {

std::string MeshTileProblem(const SchemeParams& p, int64_t mesh_ranks) {
  if (p.tile_a < 1 || p.tile_b < 1 || p.tile_a * p.tile_b != mesh_ranks) {
    return "tile " + std::to_string(p.tile_a) + " x " + std::to_string(p.tile_b) + " does not cover the " +
           std::to_string(mesh_ranks) + " mesh ranks (a*b must equal them)";
  }
  return "";
}

void MeshTilePass(Estimate& e, const PlanContext& ctx, const SchemeParams& p, const Placement& placement,
                  const ShardLayout& layout, int64_t heads, Traffic& traffic) {
  const int ulysses_dim = p.scheme == Scheme::kMeshUlysses ? 0 : -1;
  const Workload& w = ctx.workload;
  const int64_t a = p.tile_a, b = p.tile_b;
  SetFlops(e, ctx, ctx.TilePairsFor(layout, a), heads);
  double fwd_bytes = 0, bwd_bytes = 0;
  if (HasForward(w.pass)) {
    if (ulysses_dim >= 0) fwd_bytes += UlyssesIn(e, ctx, placement, ulysses_dim, Phase::kForward, false, traffic);
    fwd_bytes += MeshPass(e, ctx, p, placement, Phase::kForward, traffic);
    if (ulysses_dim >= 0) fwd_bytes += UlyssesOut(e, ctx, placement, ulysses_dim, Phase::kForward, traffic);
  }
  if (HasBackward(w.pass)) {
    if (ulysses_dim >= 0) {
      bwd_bytes += UlyssesIn(e, ctx, placement, ulysses_dim, Phase::kBackward, p.cache_forward, traffic);
    }
    bwd_bytes += MeshPass(e, ctx, p, placement, Phase::kBackward, traffic);
    if (ulysses_dim >= 0) bwd_bytes += UlyssesOut(e, ctx, placement, ulysses_dim, Phase::kBackward, traffic);
  }
  SetTraffic(e, traffic, fwd_bytes, bwd_bytes);
  const ShardBytes& s = ctx.shard;
  // Mesh keeps every Q and KV slot it receives (the paper's chunk cache), a partial accumulator
  // per Q slot plus one incoming partial; the backward adds dO, LSE, D per Q slot and partial
  // dQ per Q slot, dK,dV per KV slot. Ulysses adds head-layout copies.
  const double ulysses_fwd = ulysses_dim >= 0 ? 2 * s.q + s.kv : 0.0;
  const double ulysses_bwd = ulysses_dim >= 0 ? 2 * s.q + s.kv + s.lse : 0.0;
  SetMemory(e, ctx,
            ulysses_fwd + (a - 1) * s.q + (b - 1) * s.kv + (a + 1) * (s.o_partial + s.lse),
            ulysses_bwd + (a - 1) * ((p.cache_forward ? 0.0 : s.q) + s.q + 2 * s.lse) +
                (p.cache_forward ? 0.0 : (b - 1) * s.kv) + (a + 1) * s.dq_partial + (b + 1) * s.dkv_partial,
            ulysses_bwd + (a - 1) * s.q + (b - 1) * s.kv);
  FinishTime(e);
}

std::vector<SchemeParams> MeshStrategy::Enumerate(const PlanContext& ctx) const {
  std::vector<SchemeParams> out;
  SchemeParams p;
  p.scheme = Scheme::kMesh;
  AddTileCandidates(ctx, p, ctx.num_ranks, &out);
  return out;
}

Estimate MeshStrategy::Evaluate(const PlanContext& ctx, const SchemeParams& p) const {
  const Workload& w = ctx.workload;
  if (std::string why = MeshTileProblem(p, ctx.num_ranks); !why.empty()) return Invalid(p, why);
  const ShardLayout layout{p.layout, w.seq_len, ctx.num_ranks, 1};
  if (std::string why = LayoutOrPlacementProblem(p, layout, w.mask); !why.empty()) return Invalid(p, why);
  Estimate e = ValidEstimate(p);
  const Placement placement(p.RankDims(), p.placement);
  Traffic traffic(ctx.num_ranks, ctx.topology.num_levels());
  MeshTilePass(e, ctx, p, placement, layout, w.q_heads, traffic);
  return e;
}

Result<Schedule> MeshStrategy::Expand(const PlanContext& ctx, const SchemeParams& p) const {
  return ExpandMesh(ctx, p);
}

}  // namespace meshplan::planner::schemes
