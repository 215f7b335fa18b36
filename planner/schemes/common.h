// Pieces every strategy's analytic evaluation shares: validity helpers, FLOPs and memory
// bookkeeping, and enumeration helpers. They know no scheme but the one their caller hands them
// (its rank grid, or its strategy): nothing here asks the registry. The time stages' helpers
// (AddExposed, AddCompute, PhaseLabel) are planner/estimate.h's, which the patterns share too.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/plan/plan.h"
#include "planner/comm_model.h"
#include "planner/context.h"
#include "planner/estimate.h"
#include "planner/strategy.h"

namespace meshplan::planner::schemes {

// An estimate marked invalid with `reason`.
Estimate Invalid(const SchemeParams& params, std::string reason);

// Empty when a head-parallel degree U is usable with this workload, else the reason.
std::string UlyssesProblem(const Workload& workload, int64_t degree);
// The plan-file check of the schemes with a head-parallel degree (Strategy::CheckParams): the
// query heads divide by params.ulysses.
std::optional<Strategy::ParamProblem> HeadDegreeProblem(const SchemeParams& params,
                                                        const Workload& workload);

// Sets flops_max and flops_mean from unmasked pairs per rank (or per shard) and heads per rank.
void SetFlops(Estimate& e, const PlanContext& ctx, const std::vector<int64_t>& pairs,
              int64_t heads);

// Per-rank bytes every scheme holds: own Q, K, V, final O and LSE; with a backward also dO,
// final dQ, dK, dV and D.
double BaseMemory(const PlanContext& ctx);
// peak = base + (cache ? cache_hold : 0) + max(fwd_work if forward, bwd_work if backward).
void SetMemory(Estimate& e, const PlanContext& ctx, double fwd_work, double bwd_work,
               double cache_hold);

// Copies per-level and total bytes; fwd_bytes/bwd_bytes are the closed-form per-rank volumes.
void SetTraffic(Estimate& e, const Traffic& traffic, double fwd_bytes, double bwd_bytes);

// All orders of the dimensions (placements), canonical first.
std::vector<std::vector<std::string>> AllPlacements(const std::vector<RankDim>& dims);
// Layouts the search tries: contiguous for full masks; for causal masks zigzag (which balances
// the work exactly), or all three layouts when every_layout (Ring); for window and document
// masks zigzag and contiguous, since which one balances them depends on the mask.
std::vector<Layout> SearchLayouts(const Mask& mask, bool every_layout);
std::vector<int64_t> Divisors(int64_t n);

// Which placements AddVariants tries.
enum class Placements { kCanonical, kAll };
// Appends `base` once per layout in `layouts`, per cache choice (caching only when the pass has
// a backward) and per placement of its rank grid `dims` (its strategy's RankDims(base)).
void AddVariants(const PlanContext& ctx, SchemeParams base, const std::vector<RankDim>& dims,
                 const std::vector<Layout>& layouts, Placements placements,
                 std::vector<SchemeParams>* out);

// Layouts the 2-D tile schemes try (issue 14): those of SearchLayouts, and for causal masks
// striped too. Striped balances causal work as zigzag does (every block of a striped layout is a
// staircase of about half its pairs), and its blocks are cut pair by pair rather than in whole
// chunks, so which one wins depends on kernel efficiency and is the search's to decide.
// Contiguous is left out for causal masks: its last tile row does (2a - 1) times the first's work.
std::vector<Layout> TileLayouts(const Mask& mask);

// Every tile a x b = ranks of `base` (a 2-D scheme of `strategy`, whose RankDims gives each
// tile's rank grid; base.ulysses is kept), with TileLayouts, cache choices and all placements
// (AddVariants), and for Mesh both reduce chains (owner-last, owner-first) when
// both_reduce_chains, else base's chain only, appended to `out`.
void AddTileCandidates(const PlanContext& ctx, const Strategy& strategy, SchemeParams base,
                       int64_t ranks, bool both_reduce_chains, std::vector<SchemeParams>* out);

// The check of the schemes whose one rank dimension spans every GPU (ring, all-gather KV):
// `degree_name` degree p.ring equals the GPU count. "" when valid; the layout and placement
// check over P shards (the registry's LayoutOrPlacementProblem) follows it.
std::string WholeClusterProblem(const PlanContext& ctx, const SchemeParams& params,
                                const std::string& degree_name);
// The 2-D tile of the collective tile schemes (one tile over every GPU): a x b = P. "" when
// valid; the layout and placement check over P shards (the registry's LayoutOrPlacementProblem)
// follows it.
std::string TileGridProblem(const PlanContext& ctx, const SchemeParams& params);

// The layout fact the schemes' translation proofs rest on (Strategy::ProveTranslationInvariance):
// Ok when `layout` is valid for `mask` and its blocks are uniform in work or depend only on
// whether their two shards are the same (WorkSymmetry), else why not.
Status BlocksEqualInWork(const ShardLayout& layout, const Mask& mask);

// A valid estimate for params, to be filled by the strategy.
Estimate ValidEstimate(const SchemeParams& params);

// The a x b tile's rank grid, [q (a), kv (b)], and its degrees' short form "a=A b=B" (the tile
// schemes' Strategy::RankDims and DescribeDegrees).
inline std::vector<RankDim> TileGrid(const SchemeParams& p) {
  return {{"q", p.tile_a}, {"kv", p.tile_b}};
}
inline std::string TileDegrees(const SchemeParams& p) {
  return "a=" + std::to_string(p.tile_a) + " b=" + std::to_string(p.tile_b);
}

// Heads per rank for head-parallel degree U.
inline int64_t HeadsPerRank(const Workload& w, int64_t degree) { return w.q_heads / degree; }

}  // namespace meshplan::planner::schemes
