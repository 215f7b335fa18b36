// Mesh-Attention: a x b tiles, p2p ring shifts overlapped with compute by the greedy step
// schedule (docs/mesh-attention.md, docs/schemes.md). Its estimate and expansion are the tile
// pass of the Mesh tile family (mesh_tile.h) with no head parallelism (U = 1).
#include "planner/schemes/common.h"
#include "planner/schemes/mesh_tile.h"
#include "planner/schemes/registry.h"

namespace meshplan::planner::schemes {
namespace {

constexpr std::string_view kName = "mesh";

class MeshStrategy final : public Strategy {
 public:
  Scheme scheme() const override { return Scheme(kName); }
  std::string_view summary() const override {
    return "Mesh-Attention: an a x b tile per GPU, p2p ring shifts overlapped with the blocks by a "
           "greedy step schedule";
  }
  std::vector<RankDim> RankDims(const SchemeParams& p) const override { return TileGrid(p); }
  std::string DescribeDegrees(const SchemeParams& p) const override { return TileDegrees(p); }
  bool UsesReduceChain() const override { return true; }
  std::vector<SchemeParams> Enumerate(const PlanContext& ctx) const override;
  Estimate Evaluate(const PlanContext& ctx, const SchemeParams& params) const override;
  Result<Schedule> Expand(const PlanContext& ctx, const SchemeParams& params) const override;
  Status ProveTranslationInvariance(const PlanContext& ctx,
                                    const SchemeParams& params) const override {
    return MeshTileTranslationInvariance(ctx, params, /*u_degree=*/1);
  }
};

std::vector<SchemeParams> MeshStrategy::Enumerate(const PlanContext& ctx) const {
  std::vector<SchemeParams> out;
  SchemeParams p;
  p.scheme = scheme();
  AddTileCandidates(ctx, *this, p, ctx.num_ranks, /*both_reduce_chains=*/true, &out);
  return out;
}

Estimate MeshStrategy::Evaluate(const PlanContext& ctx, const SchemeParams& p) const {
  const Workload& w = ctx.workload;
  if (std::string why = MeshTileProblem(p, ctx.num_ranks); !why.empty()) return Invalid(p, why);
  const ShardLayout layout{p.layout, w.seq_len, ctx.num_ranks, 1};
  if (std::string why = LayoutOrPlacementProblem(p, layout, w.mask); !why.empty())
    return Invalid(p, why);
  Estimate e = ValidEstimate(p);
  const Placement placement(RankDims(p), p.placement);
  Traffic traffic(ctx.num_ranks, ctx.topology.num_levels());
  MeshTilePass(e, ctx, p, placement, layout, w.q_heads, traffic);
  return e;
}

Result<Schedule> MeshStrategy::Expand(const PlanContext& ctx, const SchemeParams& params) const {
  return ExpandMeshTiles(ctx, params, RankDims(params), /*u_degree=*/1);
}

}  // namespace

std::unique_ptr<Strategy> NewMeshStrategy() { return std::make_unique<MeshStrategy>(); }

}  // namespace meshplan::planner::schemes
