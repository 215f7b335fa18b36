// USP: Ulysses over U ranks x Ring over R ranks, P = U*R (docs/schemes.md). Expansion
// (docs/schedules.md): all-to-all over the U ranks sharing a ring coordinate, then a ring over the
// R ranks sharing a Ulysses index (heads [u*Hq/U, (u+1)*Hq/U)), then all-to-all back: the
// head-ring schedule with a single window (w = R).
#include "planner/schedule_builder.h"
#include "planner/schemes/common.h"
#include "planner/schemes/head_ring.h"
#include "planner/schemes/registry.h"

namespace meshplan::planner::schemes {
namespace {

constexpr std::string_view kName = "usp";

class UspStrategy final : public Strategy {
 public:
  Scheme scheme() const override { return Scheme(kName); }
  std::string_view summary() const override {
    return "USP: Ulysses over U GPUs x Ring over R GPUs";
  }
  bool OffersManyRangeLayouts() const override { return true; }
  std::vector<RankDim> RankDims(const SchemeParams& p) const override {
    return {{"ulysses", p.ulysses}, {"ring", p.ring}};
  }
  std::string DescribeDegrees(const SchemeParams& p) const override {
    return "U=" + std::to_string(p.ulysses) + " R=" + std::to_string(p.ring);
  }
  std::optional<ParamProblem> CheckParams(const SchemeParams& p, const Workload& w) const override {
    return HeadDegreeProblem(p, w);
  }
  std::vector<SchemeParams> Enumerate(const PlanContext& ctx) const override;
  Estimate Evaluate(const PlanContext& ctx, const SchemeParams& params) const override;
  Result<Schedule> Expand(const PlanContext& ctx, const SchemeParams& params) const override;
  // Megatron's a2a+p2p (the all-to-all the inner level) and yunchang's set_seq_parallel_pg
  // (docs/frameworks.md).
  FrameworkRun RunIn(Framework f, const SchemeParams& p, const Workload& w,
                     const FrameworkJob& job) const override {
    namespace rules = framework_rules;
    const bool ulysses_inner = p.placement.empty() || p.placement.front() != "ring";
    if (f == Framework::kMegatron) {
      if (auto no = FirstRefusal(
              {rules::MegatronWindow(w, "a2a+p2p"), rules::CausalOrFull(w, "its a2a+p2p"),
               rules::MegatronSequence(w, job)},
              {rules::MegatronLayout(p, w), rules::NoForwardCache(p, w),
               ulysses_inner ? "" : "its a2a+p2p keeps the all-to-all inside (place=ulysses>ring)",
               p.ring > 1 ? "" : "with a ring of one it runs a2a (the ulysses scheme)"})) {
        return *no;
      }
      return MegatronRun(w, job, "a2a+p2p",
                         "--hierarchical-context-parallel-sizes " + std::to_string(p.ulysses) +
                             " " + std::to_string(p.ring));
    }
    if (f == Framework::kYunchang) {
      if (auto no = FirstRefusal(
              {rules::YunchangMask(w)},
              {rules::YunchangRing(p, w),
               ulysses_inner || p.layout == Layout::kZigzag
                   ? ""
                   : "use_ulysses_low=False shards inputs right only for the zigzag ring"})) {
        return *no;
      }
      return Runs(YunchangSettings(p.ulysses, p.ring, ulysses_inner, p.layout, job));
    }
    return Strategy::RunIn(f, p, w, job);
  }
};

std::vector<SchemeParams> UspStrategy::Enumerate(const PlanContext& ctx) const {
  std::vector<SchemeParams> out;
  SchemeParams p;
  p.scheme = scheme();
  for (int64_t u : Divisors(ctx.num_ranks)) {
    if (u == 1 || !UlyssesProblem(ctx.workload, u).empty()) continue;
    p.ulysses = u;
    p.ring = ctx.num_ranks / u;
    if (p.ring == 1) {
      // U = P: USP with a ring of one (yunchang's set_seq_parallel_pg(P, 1)), listed under its own
      // name so that a framework's settings name what runs; Ulysses' plan, its layout contiguous.
      AddVariants(ctx, p, RankDims(p), {Layout::kContiguous}, Placements::kCanonical, &out);
      continue;
    }
    // Every ring layout yunchang offers (basic, zigzag, strip) on causal masks.
    AddVariants(ctx, p, RankDims(p), SearchLayouts(ctx.workload.mask, /*every_layout=*/true),
                Placements::kAll, &out);
  }
  if (out.empty()) {  // keep one candidate so the reason is shown
    p.ulysses = 2;
    p.ring = std::max<int64_t>(1, ctx.num_ranks / 2);
    p.placement = CanonicalPlacement(RankDims(p));
    out.push_back(p);
  }
  return out;
}

Estimate UspStrategy::Evaluate(const PlanContext& ctx, const SchemeParams& p) const {
  const Workload& w = ctx.workload;
  const int64_t ranks = ctx.num_ranks;
  if (ranks < 2) return Invalid(p, "USP needs at least 2 GPUs");
  if (p.ulysses < 1 || p.ring < 1 || p.ulysses * p.ring != ranks) {
    return Invalid(p, "U x R = " + std::to_string(p.ulysses) + " x " + std::to_string(p.ring) +
                          " must equal the " + std::to_string(ranks) + " GPUs");
  }
  if (std::string why = UlyssesProblem(w, p.ulysses); !why.empty()) return Invalid(p, why);
  const ShardLayout layout = ctx.LayoutFor(p.layout, p.ring, p.ulysses);
  if (std::string why = LayoutOrPlacementProblem(p, layout, w.mask); !why.empty())
    return Invalid(p, why);

  return HeadRingEstimate(ctx, p, RankDims(p), layout, /*double_ring=*/false);
}

Result<Schedule> UspStrategy::Expand(const PlanContext& ctx, const SchemeParams& params) const {
  const int64_t u = params.ulysses, r = params.ring;
  if (u < 1 || r < 1) return Status::Invalid("usp needs ulysses >= 1 and ring >= 1");
  const ShardLayout layout = ctx.LayoutFor(params.layout, r, u);
  MESHPLAN_RETURN_IF_ERROR(sched::CheckGrid(ctx, params, RankDims(params), layout, u));
  return ExpandHeadRing(ctx, params, layout, u, r, /*w=*/r);
}

}  // namespace

std::unique_ptr<Strategy> NewUspStrategy() { return std::make_unique<UspStrategy>(); }

}  // namespace meshplan::planner::schemes
