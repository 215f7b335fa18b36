// The plans several simulator tests replay two ways and compare: the top 3 plans of every scheme
// for masks full, causal and window and passes fwd and fwd+bwd at 32K tokens on a topology.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "core/cluster/topology.h"
#include "core/plan/plan.h"
#include "planner/context.h"
#include "planner/plan_schedule.h"
#include "planner/schemes/registry.h"
#include "planner/search.h"

namespace meshplan::sim::testing {

// Calls check(plan, workload, what) for the top 3 plans of every scheme, for masks full, causal and
// window and passes fwd and fwd+bwd at 32K tokens on `topology`, until a check fails; returns
// how many plans were checked.
template <typename Check>
int ForEachTopPlan(const Topology& topology, Check check) {
  int checked = 0;
  for (const Mask& mask : {Mask::Full(), Mask::Causal(), Mask::Window(4096)}) {
    for (Pass pass : {Pass::kForward, Pass::kForwardBackward}) {
      Workload w = Workload::Default();
      w.seq_len = 1 << 15;
      w.mask = mask;
      w.pass = pass;
      const planner::PlanContext ctx(w, topology);
      for (Scheme scheme : planner::AllSchemes()) {
        planner::SearchOptions only;
        only.schemes = {scheme};
        const planner::SearchResult found = planner::Search(ctx, only);
        for (size_t k = 0; k < found.ranked.size() && k < 3; ++k) {
          if (!found.ranked[k].valid) continue;
          const Plan plan = planner::MakePlan(ctx, found.ranked[k].params);
          const std::string what =
              std::string(SchemeName(scheme)) + " " + planner::DescribeParams(plan.params) + " " +
              std::string(PassName(pass)) + " mask " + std::to_string(static_cast<int>(mask.kind));
          check(plan, w, what);
          if (::testing::Test::HasFailure()) return checked;
          ++checked;
        }
      }
    }
  }
  return checked;
}

}  // namespace meshplan::sim::testing
