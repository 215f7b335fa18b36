// Mesh x Ulysses hybrid: head parallelism of degree U, Mesh-Attention over the other P/U ranks
// (docs/schemes.md). None of the published systems offers it. Its estimate and expansion are
// the tile pass it shares with Mesh (mesh_tile.h), wrapped in the Ulysses all-to-alls.
#include <algorithm>

#include "planner/schemes/common.h"
#include "planner/schemes/mesh_tile.h"
#include "planner/schemes/registry.h"

namespace meshplan::planner::schemes {
namespace {

constexpr std::string_view kName = "mesh-ulysses";

class MeshUlyssesStrategy final : public Strategy {
 public:
  Scheme scheme() const override { return Scheme(kName); }
  std::string_view summary() const override {
    return "Ulysses over U GPUs x Mesh-Attention a x b tiles over the other GPUs (meshplan's "
           "hybrid)";
  }
  std::vector<RankDim> RankDims(const SchemeParams& p) const override {
    return {{"ulysses", p.ulysses}, {"q", p.tile_a}, {"kv", p.tile_b}};
  }
  std::string DescribeDegrees(const SchemeParams& p) const override {
    return "U=" + std::to_string(p.ulysses) + " " + TileDegrees(p);
  }
  bool UsesReduceChain() const override { return true; }
  std::optional<ParamProblem> CheckParams(const SchemeParams& p, const Workload& w) const override {
    return HeadDegreeProblem(p, w);
  }
  std::vector<SchemeParams> Enumerate(const PlanContext& ctx) const override;
  Estimate Evaluate(const PlanContext& ctx, const SchemeParams& params) const override;
  Result<Schedule> Expand(const PlanContext& ctx, const SchemeParams& params) const override;
  Status ProveTranslationInvariance(const PlanContext& ctx,
                                    const SchemeParams& params) const override {
    return MeshTileTranslationInvariance(ctx, params, params.ulysses);
  }
};

std::vector<SchemeParams> MeshUlyssesStrategy::Enumerate(const PlanContext& ctx) const {
  std::vector<SchemeParams> out;
  SchemeParams p;
  p.scheme = scheme();
  for (int64_t u : Divisors(ctx.num_ranks)) {
    if (u == 1 || !UlyssesProblem(ctx.workload, u).empty()) continue;
    const int64_t mesh_ranks = ctx.num_ranks / u;
    p.ulysses = u;
    // The owner-last chain only, so that the candidates (already x Ulysses degrees) do not
    // double; the chains differ by one hop per reduction (docs/mesh-attention.md).
    AddTileCandidates(ctx, *this, p, mesh_ranks, /*both_reduce_chains=*/false, &out);
  }
  if (out.empty()) {  // keep one candidate so the reason is shown
    p.ulysses = 2;
    p.tile_a = 1;
    p.tile_b = std::max<int64_t>(1, ctx.num_ranks / 2);
    p.placement = CanonicalPlacement(RankDims(p));
    out.push_back(p);
  }
  return out;
}

Estimate MeshUlyssesStrategy::Evaluate(const PlanContext& ctx, const SchemeParams& p) const {
  const Workload& w = ctx.workload;
  if (p.ulysses < 2)
    return Invalid(p, "mesh-ulysses needs a head-parallel degree of at least 2 (U = 1 is mesh)");
  if (ctx.num_ranks % p.ulysses != 0) {
    return Invalid(p, "Ulysses degree " + std::to_string(p.ulysses) + " does not divide the " +
                          std::to_string(ctx.num_ranks) + " GPUs");
  }
  if (std::string why = UlyssesProblem(w, p.ulysses); !why.empty()) return Invalid(p, why);
  const int64_t mesh_ranks = ctx.num_ranks / p.ulysses;
  if (std::string why = MeshTileProblem(p, mesh_ranks); !why.empty()) return Invalid(p, why);
  const ShardLayout layout{p.layout, w.seq_len, mesh_ranks, p.ulysses};
  if (std::string why = LayoutOrPlacementProblem(p, layout, w.mask); !why.empty())
    return Invalid(p, why);
  Estimate e = ValidEstimate(p);
  const Placement placement(RankDims(p), p.placement);
  Traffic traffic(ctx.num_ranks, ctx.topology.num_levels());
  MeshTilePass(e, ctx, p, placement, layout, HeadsPerRank(w, p.ulysses), traffic);
  return e;
}

Result<Schedule> MeshUlyssesStrategy::Expand(const PlanContext& ctx,
                                             const SchemeParams& params) const {
  return ExpandMeshTiles(ctx, params, RankDims(params), params.ulysses);
}

}  // namespace

std::unique_ptr<Strategy> NewMeshUlyssesStrategy() {
  return std::make_unique<MeshUlyssesStrategy>();
}

}  // namespace meshplan::planner::schemes
