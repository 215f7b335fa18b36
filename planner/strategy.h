// One strategy per scheme. A strategy knows its scheme's rules and nothing about timing engines
// or GPUs: it enumerates parameter choices, evaluates them analytically and expands them into
// the per-rank schedule that the simulator and the executor consume. Each scheme's strategy is
// one file, planner/schemes/<name>.cc, listed in planner/schemes/registry.cc.
#pragma once

#include <memory>
#include <vector>

#include "core/plan.h"
#include "core/schedule.h"
#include "planner/context.h"
#include "planner/estimate.h"

namespace meshplan::planner {

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual Scheme scheme() const = 0;
  // Every parameter choice worth ranking on this cluster (including invalid ones only when no
  // valid one exists, so the reason can be shown).
  virtual std::vector<SchemeParams> Enumerate(const PlanContext& ctx) const = 0;
  // Validity first: an invalid plan comes back with valid = false and a reason.
  virtual Estimate Evaluate(const PlanContext& ctx, const SchemeParams& params) const = 0;
  // REQUIRES: Evaluate(ctx, params).valid
  virtual Result<Schedule> Expand(const PlanContext& ctx, const SchemeParams& params) const = 0;
};

// The strategy of `scheme`, from the registry; nullptr for a scheme the registry lacks.
std::unique_ptr<Strategy> MakeStrategy(Scheme scheme);

}  // namespace meshplan::planner
