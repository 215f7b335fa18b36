// LoongTrain: head parallelism hp x double-ring context parallelism cp with windows of w ranks
// (docs/schemes.md).
#include "planner/schedules/expand.h"
#include "planner/schemes/common.h"
#include "planner/schemes/head_ring.h"
#include "planner/schemes/strategies.h"

namespace meshplan::planner::schemes {

std::vector<SchemeParams> LoongTrainStrategy::Enumerate(const PlanContext& ctx) const {
  std::vector<SchemeParams> out;
  const Workload& w = ctx.workload;
  for (int64_t hp : Divisors(ctx.num_ranks)) {
    if (!UlyssesProblem(w, hp).empty()) continue;
    const int64_t cp = ctx.num_ranks / hp;
    for (int64_t window : Divisors(cp)) {
      if (window == 1 || window == cp) continue;  // one window or windows of one: a plain ring
      for (Layout layout : SearchLayouts(w.mask, false)) {
        for (bool cache : {false, true}) {
          if (cache && !HasBackward(w.pass)) continue;
          SchemeParams p;
          p.scheme = Scheme::kLoongTrain;
          p.layout = layout;
          p.ulysses = hp;
          p.ring = cp;
          p.window = window;
          p.cache_forward = cache;
          // Windows (the outer ring) span nodes; the inner ring and the head group compete for
          // the innermost placement.
          for (auto placement : {std::vector<std::string>{"head", "inner", "outer"},
                                 std::vector<std::string>{"inner", "head", "outer"}}) {
            if (hp == 1 && placement[0] == "inner") continue;  // same GPUs as the first order
            p.placement = placement;
            out.push_back(p);
          }
        }
      }
    }
  }
  if (out.empty()) {
    SchemeParams p;
    p.scheme = Scheme::kLoongTrain;
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
  if (p.window < 1 || p.ring % p.window != 0) {
    return Invalid(p, "window " + std::to_string(p.window) + " must divide cp = " + std::to_string(p.ring));
  }
  if (p.window == 1 || p.window == p.ring) {
    return Invalid(p, "a double ring needs 1 < w < cp (cp = " + std::to_string(p.ring) +
                          "); with w = 1 or w = cp it is a plain ring (use usp or ring)");
  }
  if (std::string why = UlyssesProblem(w, p.ulysses); !why.empty()) return Invalid(p, why);
  const ShardLayout layout{p.layout, w.seq_len, p.ring, p.ulysses};
  if (std::string why = LayoutOrPlacementProblem(p, layout, w.mask); !why.empty()) return Invalid(p, why);

  return HeadRingEstimate(ctx, p, layout);
}

Result<Schedule> LoongTrainStrategy::Expand(const PlanContext& ctx, const SchemeParams& p) const {
  return ExpandLoongTrain(ctx, p);
}

}  // namespace meshplan::planner::schemes
