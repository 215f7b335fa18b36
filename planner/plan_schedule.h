// A plan file's recipe, checked against a topology and expanded: the one path from a Plan to the
// Schedule it stands for (core/plan/plan.h, core/plan/schedule.h), for every consumer that replays
// or runs plans. SimulatePlan uses it; tools/execute_command.cc still has its own copy, to be
// switched.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/base/status.h"
#include "core/cluster/topology.h"
#include "core/plan/plan.h"
#include "core/plan/schedule.h"
#include "planner/context.h"
#include "planner/estimate.h"

namespace meshplan::planner {

struct PlanSchedule {
  Estimate estimate;                 // the strategy's analytic verdict (valid) on plan and topology
  Schedule schedule;                 // the plan's expanded per-rank programs
  std::vector<int64_t> rank_to_gpu;  // rank r runs on GPU rank_to_gpu[r] (the plan's placement)
};

// Checks `plan` against `topology` and expands it with its scheme's strategy. Errors, one line
// each and in this order:
//   - GPU-count mismatch (kInvalidInput): names both counts, the topology and its source;
//   - a dtype the topology's GPU has no peak rate for (Topology::SupportsDType);
//   - no strategy for the scheme (kInternal);
//   - parameters the strategy rejects (kInvalidInput):
//     "plan <scheme> <params> is not valid on topology '<name>': <reason>";
//   - a placement that is not a permutation of the rank grid ("scheme.placement: ...");
//   - errors from Strategy::Expand, passed through.
// The schedule is not run through CheckSchedule (planner/schedule_check.h says why).
// REQUIRES: plan came from ParsePlanToml/LoadPlanFile (validated workload) and topology is valid.
// `rank_done` (optional) is called once per rank with that rank's complete program and may
// replace it: during the expansion where the scheme's expansion supports it (the Mesh
// tile family, whose programs are P^2 blocks), after it for every other rank. Its false stops the
// expansion, which then returns sched::ExpansionStopped().
// `expand_rank` (optional) is PlanContext::expand_rank: with a scheme whose
// ProveTranslationInvariance holds for the plan, only the ranks it accepts are expanded (and
// handed to rank_done); the others' programs stay empty. Other schemes expand every rank.
Result<PlanSchedule> ExpandPlan(const Plan& plan, const Topology& topology,
                                const RankProgramHook& rank_done = {},
                                const std::function<bool(int64_t rank)>& expand_rank = {});

// The plan's scheme's Strategy::ProveTranslationInvariance on `topology`: Ok when the schedule
// provably commutes with every translation of the rank grid, else why not (one line; also when
// the plan does not hold on the topology).
// REQUIRES: as ExpandPlan.
Status ProveTranslationInvariance(const Plan& plan, const Topology& topology);

}  // namespace meshplan::planner
