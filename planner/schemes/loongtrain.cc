// LoongTrain: head parallelism hp x double-ring context parallelism cp with windows of w ranks
// (docs/schemes.md). Expansion (docs/schedules.md): like the single-ring head-parallel scheme, but
// the ring is a double ring: cp/w rounds of w-1 inner shifts each, with the outer shift of the next
// round's KV overlapped with the inner rotation.
#include "planner/schedule_builder.h"
#include "planner/schemes/common.h"
#include "planner/schemes/head_ring.h"
#include "planner/schemes/registry.h"

namespace meshplan::planner::schemes {
namespace {

constexpr std::string_view kName = "loongtrain";

// The window rule, the one place enumeration, validity and expansion read it. Windows of w ring
// ranks must tile the cp ring ranks: w >= 1 divides cp. A double ring proper has 1 < w < cp;
// w = 1 (windows of one rank) or w = cp (one window) is a plain ring, which the single-ring schemes
// already offer, so the search skips it and Evaluate rejects it; Expand still builds it (the
// schedule is well formed, and the expansion tests cover these edge cases).
// w = cp is one window spanning the ring (a single ring, as InternEvo runs window_size = cp and
// hp = P with cp = 1); w = 1 is the same ring over the outer dimension, which w = cp names.
enum class Window { kNotDividing, kOuterOnly, kOneRing, kDoubleRing };
Window ClassifyWindow(int64_t cp, int64_t w) {
  if (w < 1 || cp < 1 || cp % w != 0) return Window::kNotDividing;
  if (w == cp) return Window::kOneRing;
  if (w == 1) return Window::kOuterOnly;
  return Window::kDoubleRing;
}

class LoongTrainStrategy final : public Strategy {
 public:
  Scheme scheme() const override { return Scheme(kName); }
  std::string_view summary() const override {
    return "LoongTrain: head parallelism hp x double ring of cp GPUs in windows of w";
  }
  bool OffersManyRangeLayouts() const override { return true; }
  std::vector<RankDim> RankDims(const SchemeParams& p) const override {
    return {
        {"head", p.ulysses}, {"inner", p.window}, {"outer", p.window > 0 ? p.ring / p.window : 0}};
  }
  std::string DescribeDegrees(const SchemeParams& p) const override {
    return "hp=" + std::to_string(p.ulysses) + " cp=" + std::to_string(p.ring) +
           " w=" + std::to_string(p.window);
  }
  std::optional<ParamProblem> CheckParams(const SchemeParams& p, const Workload& w) const override {
    if (ClassifyWindow(p.ring, p.window) == Window::kNotDividing) {
      return ParamProblem{"window", "the inner ring size " + std::to_string(p.window) +
                                        " must divide the ring (cp) degree " +
                                        std::to_string(p.ring)};
    }
    return HeadDegreeProblem(p, w);
  }
  std::vector<SchemeParams> Enumerate(const PlanContext& ctx) const override;
  Estimate Evaluate(const PlanContext& ctx, const SchemeParams& params) const override;
  Result<Schedule> Expand(const PlanContext& ctx, const SchemeParams& params) const override;
  // InternEvo's 2D-Attention (parallel.sequence_2D): zigzag double ring (one window spanning it:
  // window_size = cp), causal, the head group first (head_first=True) or last; hp = P is its
  // plain ISP (docs/frameworks.md).
  FrameworkRun RunIn(Framework f, const SchemeParams& p, const Workload& w,
                     const FrameworkJob& job) const override {
    namespace rules = framework_rules;
    if (f != Framework::kInternEvo) return Strategy::RunIn(f, p, w, job);
    if (p.ring == 1) {
      // hp = P: InternEvo's plain ISP (the heads' all-to-all, no ring), any mask its kernel takes.
      if (auto no = FirstRefusal({rules::InternEvoDegrees(job)}, {rules::NoForwardCache(p, w)}))
        return *no;
      return Runs("parallel = dict(tensor=dict(size=" + std::to_string(p.ulysses) +
                  ", mode=\"isp\"))");
    }
    const bool head_first = p.placement == std::vector<std::string>{"head", "inner", "outer"};
    const bool head_last = p.placement == std::vector<std::string>{"inner", "outer", "head"};
    // The causal-only ring is a variant's reason: plain ISP (hp = P) takes the other masks.
    if (auto no = FirstRefusal(
            {rules::InternEvoDegrees(job)},
            {w.mask.kind == MaskKind::kCausal ? "" : "its zigzag double ring is causal only",
             p.layout == Layout::kZigzag ? "" : "its double ring is zigzag only",
             rules::NoForwardCache(p, w),
             head_first || head_last ? ""
                                     : "its process groups put the head group first or last "
                                       "(head_first), not between the windows"})) {
      return *no;
    }
    return Runs(
        "parallel = dict(tensor=dict(size=" + std::to_string(p.ulysses * p.ring) +
        ", mode=\"isp\"), sequence_2D=dict(enable=True, head_size=" + std::to_string(p.ulysses) +
        ", context_size=" + std::to_string(p.ring) + ", window_size=" + std::to_string(p.window) +
        ", device_placement_strategy=dict(head_first=" + (head_first ? "True" : "False") +
        ", interleaved=False)))");
  }
};

std::vector<SchemeParams> LoongTrainStrategy::Enumerate(const PlanContext& ctx) const {
  std::vector<SchemeParams> out;
  const Workload& w = ctx.workload;
  for (int64_t hp : Divisors(ctx.num_ranks)) {
    if (!UlyssesProblem(w, hp).empty()) continue;
    const int64_t cp = ctx.num_ranks / hp;
    for (int64_t window : Divisors(cp)) {
      const Window kind = ClassifyWindow(cp, window);
      if (kind != Window::kDoubleRing && kind != Window::kOneRing) continue;
      // cp = 1 (hp = P) has no ring: Ulysses' plan, its layout contiguous.
      const std::vector<Layout> layouts =
          cp == 1 ? std::vector<Layout>{Layout::kContiguous} : SearchLayouts(w.mask, false);
      for (Layout layout : layouts) {
        for (bool cache : {false, true}) {
          if (cache && !HasBackward(w.pass)) continue;
          SchemeParams p;
          p.scheme = scheme();
          p.layout = layout;
          p.ulysses = hp;
          p.ring = cp;
          p.window = window;
          p.cache_forward = cache;
          // Windows (the outer ring) span nodes; the inner ring and the head group compete for
          // the innermost placement.
          for (auto placement : {std::vector<std::string>{"head", "inner", "outer"},
                                 std::vector<std::string>{"inner", "head", "outer"}}) {
            // Same GPUs as the first order when one of the two leading dims has size 1.
            if ((hp == 1 || window == 1) && placement[0] == "inner") continue;
            p.placement = placement;
            out.push_back(p);
          }
        }
      }
    }
  }
  if (out.empty()) {
    SchemeParams p;
    p.scheme = scheme();
    p.ring = ctx.num_ranks;
    p.window = ctx.num_ranks;
    p.placement = {"head", "inner", "outer"};
    out.push_back(p);
  }
  return out;
}

Estimate LoongTrainStrategy::Evaluate(const PlanContext& ctx, const SchemeParams& p) const {
  const Workload& w = ctx.workload;
  const int64_t ranks = ctx.num_ranks;
  if (p.ulysses < 1 || p.ring < 1 || p.ulysses * p.ring != ranks) {
    return Invalid(p, "hp x cp = " + std::to_string(p.ulysses) + " x " + std::to_string(p.ring) +
                          " must equal the " + std::to_string(ranks) + " GPUs");
  }
  switch (ClassifyWindow(p.ring, p.window)) {
    case Window::kNotDividing:
      return Invalid(
          p, "window " + std::to_string(p.window) + " must divide cp = " + std::to_string(p.ring));
    case Window::kOuterOnly:
      return Invalid(p, "w = 1 is one ring over the windows; give it as w = cp (" +
                            std::to_string(p.ring) + "), one window spanning the ring");
    case Window::kOneRing:
    case Window::kDoubleRing:
      break;
  }
  if (std::string why = UlyssesProblem(w, p.ulysses); !why.empty()) return Invalid(p, why);
  const ShardLayout layout = ctx.LayoutFor(p.layout, p.ring, p.ulysses);
  if (std::string why = LayoutOrPlacementProblem(p, layout, w.mask); !why.empty())
    return Invalid(p, why);

  // One window spanning the ring is a single ring over the inner dimension (head_ring.h's passes).
  return HeadRingEstimate(ctx, p, RankDims(p), layout,
                          /*double_ring=*/ClassifyWindow(p.ring, p.window) == Window::kDoubleRing);
}

Result<Schedule> LoongTrainStrategy::Expand(const PlanContext& ctx,
                                            const SchemeParams& params) const {
  const int64_t u = params.ulysses, cp = params.ring, w = params.window;
  if (u < 1 || cp < 1 || w < 1) return Status::Invalid("loongtrain needs head, cp and window >= 1");
  if (ClassifyWindow(cp, w) == Window::kNotDividing) {
    return Status::Invalid("loongtrain window " + std::to_string(w) + " does not divide cp " +
                           std::to_string(cp));
  }
  const ShardLayout layout = ctx.LayoutFor(params.layout, cp, u);
  MESHPLAN_RETURN_IF_ERROR(sched::CheckGrid(ctx, params, RankDims(params), layout, u));
  return ExpandHeadRing(ctx, params, layout, u, cp, w);
}

}  // namespace

std::unique_ptr<Strategy> NewLoongTrainStrategy() { return std::make_unique<LoongTrainStrategy>(); }

}  // namespace meshplan::planner::schemes
