#include "planner/schemes/common.h"

#include <algorithm>

namespace meshplan::planner::schemes {

Estimate Invalid(const SchemeParams& params, std::string reason) {
  Estimate e;
  e.params = params;
  e.valid = false;
  e.reason = std::move(reason);
  return e;
}

std::optional<Strategy::ParamProblem> HeadDegreeProblem(const SchemeParams& params,
                                                        const Workload& workload) {
  if (params.ulysses < 1 || workload.q_heads % params.ulysses == 0) return std::nullopt;
  return Strategy::ParamProblem{"ulysses", "heads (" + std::to_string(workload.q_heads) +
                                               ") must be divisible by the head-parallel degree (" +
                                               std::to_string(params.ulysses) + ")"};
}

std::string UlyssesProblem(const Workload& w, int64_t degree) {
  if (degree < 1) return "head-parallel degree must be at least 1";
  if (degree > w.kv_heads) {
    return "head-parallel degree " + std::to_string(degree) + " exceeds the " +
           std::to_string(w.kv_heads) + " KV heads";
  }
  if (w.kv_heads % degree != 0) {
    return "head-parallel degree " + std::to_string(degree) + " does not divide the " +
           std::to_string(w.kv_heads) + " KV heads";
  }
  return "";
}

void SetFlops(Estimate& e, const PlanContext& ctx, const std::vector<int64_t>& pairs,
              int64_t heads) {
  int64_t max_pairs = 0;
  double sum = 0;
  for (int64_t p : pairs) {
    max_pairs = std::max(max_pairs, p);
    sum += static_cast<double>(p);
  }
  const double factor = PassFlopsFactor(ctx.workload.pass);
  e.flops_max = ctx.ForwardFlops(max_pairs, heads) * factor;
  e.flops_mean =
      pairs.empty() ? 0.0
                    : ctx.ForwardFlops(1, heads) * factor * sum / static_cast<double>(pairs.size());
}

double BaseMemory(const PlanContext& ctx) {
  const ShardBytes& s = ctx.shard;
  double bytes = s.q + s.kv + s.q + s.lse;                                // Q, K+V, O, LSE
  if (HasBackward(ctx.workload.pass)) bytes += s.q + s.q + s.kv + s.lse;  // dO, dQ, dK+dV, D
  return bytes;
}

void SetMemory(Estimate& e, const PlanContext& ctx, double fwd_work, double bwd_work,
               double cache_hold) {
  const Pass pass = ctx.workload.pass;
  const bool cache = e.params.cache_forward && HasBackward(pass);
  double work = 0;
  if (HasForward(pass)) work = std::max(work, fwd_work);
  if (HasBackward(pass)) work = std::max(work, bwd_work);
  e.peak_memory_bytes = BaseMemory(ctx) + (cache ? cache_hold : 0.0) + work;
  e.fits = e.peak_memory_bytes + ctx.reserved_memory_bytes <= ctx.topology.gpu.MemoryPerRankBytes();
}

void SetTraffic(Estimate& e, const Traffic& traffic, double fwd_bytes, double bwd_bytes) {
  e.level_bytes = traffic.MaxPerLevel();
  e.fwd_bytes_per_rank = fwd_bytes;
  e.bwd_bytes_per_rank = bwd_bytes;
  e.bytes_per_rank = traffic.MaxTotal();
}

std::vector<std::vector<std::string>> AllPlacements(const std::vector<RankDim>& dims) {
  // Orders differing only in where size-1 dimensions sit are the same placement: permute the
  // dimensions of size > 1 (canonical order first) and append the others.
  std::vector<std::string> moving, fixed;
  for (const RankDim& d : dims) (d.size > 1 ? moving : fixed).push_back(d.name);
  std::vector<int> order(moving.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::vector<std::vector<std::string>> out;
  do {
    std::vector<std::string> p;
    for (int i : order) p.push_back(moving[i]);
    p.insert(p.end(), fixed.begin(), fixed.end());
    out.push_back(std::move(p));
  } while (std::next_permutation(order.begin(), order.end()));
  return out;
}

std::vector<Layout> SearchLayouts(const Mask& mask, bool every_layout) {
  switch (mask.kind) {
    case MaskKind::kFull:
      return {Layout::kContiguous};  // every layout balances a full mask
    case MaskKind::kCausal:
      if (every_layout) return {Layout::kZigzag, Layout::kContiguous, Layout::kStriped};
      return {Layout::kZigzag};  // zigzag balances causal work exactly
    default:
      // Which layout balances a window, a prefix or a set of documents depends on them: try both,
      // and for documents the load-balanced dispatch too (its chunks follow the documents) and
      // each document zigzagged on its own (TransformerEngine's THD split; refused where the
      // documents are not multiples of 2 x CP).
      if (mask.IsDocuments())
        return {Layout::kZigzag, Layout::kContiguous, Layout::kBalanced, Layout::kDocZigzag};
      return {Layout::kZigzag, Layout::kContiguous};
  }
}

std::vector<int64_t> Divisors(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t d = 1; d * d <= n; ++d) {
    if (n % d == 0) {
      out.push_back(d);
      if (d * d != n) out.push_back(n / d);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

void AddVariants(const PlanContext& ctx, SchemeParams base, const std::vector<RankDim>& dims,
                 const std::vector<Layout>& layouts, Placements placements,
                 std::vector<SchemeParams>* out) {
  const auto orders = placements == Placements::kAll
                          ? AllPlacements(dims)
                          : std::vector<std::vector<std::string>>{CanonicalPlacement(dims)};
  for (Layout layout : layouts) {
    for (bool cache : {false, true}) {
      if (cache && !HasBackward(ctx.workload.pass)) continue;
      base.layout = layout;
      base.cache_forward = cache;
      for (const auto& order : orders) {
        base.placement = order;
        out->push_back(base);
      }
    }
  }
}

std::vector<Layout> TileLayouts(const Mask& mask) {
  // The 2-D schemes' tiles pair each shard with at most two ranges (zigzag): no balanced or
  // doc-zigzag layout.
  std::vector<Layout> layouts = SearchLayouts(mask, false);
  std::erase(layouts, Layout::kBalanced);
  std::erase(layouts, Layout::kDocZigzag);
  if (mask.kind == MaskKind::kCausal) layouts.push_back(Layout::kStriped);
  return layouts;
}

void AddTileCandidates(const PlanContext& ctx, const Strategy& strategy, SchemeParams base,
                       int64_t ranks, bool both_reduce_chains, std::vector<SchemeParams>* out) {
  const std::vector<ReduceChain> chains =
      both_reduce_chains
          ? std::vector<ReduceChain>{ReduceChain::kOwnerLast, ReduceChain::kOwnerFirst}
          : std::vector<ReduceChain>{base.reduce_chain};
  for (int64_t a : Divisors(ranks)) {
    base.tile_a = a;
    base.tile_b = ranks / a;
    for (ReduceChain chain : chains) {
      base.reduce_chain = chain;
      AddVariants(ctx, base, strategy.RankDims(base), TileLayouts(ctx.workload.mask),
                  Placements::kAll, out);
    }
  }
}

std::string WholeClusterProblem(const PlanContext& ctx, const SchemeParams& p,
                                const std::string& degree_name) {
  if (p.ring != ctx.num_ranks) {
    return degree_name + " degree " + std::to_string(p.ring) + " must equal the " +
           std::to_string(ctx.num_ranks) + " GPUs";
  }
  return "";
}

std::string TileGridProblem(const PlanContext& ctx, const SchemeParams& p) {
  const int64_t ranks = ctx.num_ranks;
  if (p.tile_a < 1 || p.tile_b < 1 || p.tile_a * p.tile_b != ranks) {
    return "tile " + std::to_string(p.tile_a) + " x " + std::to_string(p.tile_b) +
           " does not cover the " + std::to_string(ranks) + " GPUs (a*b must equal P)";
  }
  return "";
}

Status BlocksEqualInWork(const ShardLayout& layout, const Mask& mask) {
  MESHPLAN_RETURN_IF_ERROR(layout.Validate(mask));
  if (WorkSymmetry(layout, mask) == BlockWorkSymmetry::kNone) {
    return Status::Invalid("the " + std::string(LayoutName(layout.kind)) +
                           " layout's blocks under the " + mask.ToString() +
                           " mask are not proven equal in work");
  }
  return Status::Ok();
}

Estimate ValidEstimate(const SchemeParams& params) {
  Estimate e;
  e.params = params;
  e.valid = true;
  return e;
}

}  // namespace meshplan::planner::schemes
