// Rendering of `meshplan plan` results (the planner's search): ranked table, JSON, CSV and the
// [estimate] table of a plan file. Equivalent plans (planner/equivalence.h) are listed as one
// group unless every variant is asked for; formats are specified in docs/plan-output.md.
#pragma once

#include <string>

#include "core/schedule.h"
#include "planner/context.h"
#include "planner/estimate.h"
#include "planner/search.h"

namespace meshplan::report {

// What a listing shows.
struct PlanListing {
  int top = 20;               // groups to list (plans with all_variants); 0: all
  bool all_variants = false;  // every plan on its own row, ungrouped
  bool wide = false;          // table: also compute and imbalance, bytes with two decimals
};

// The plan whose breakdown `plan --explain N` adds to a JSON document.
struct ExplainedPlan {
  int plan_number = 0;                 // 1-based place in the full ranking
  const Schedule* schedule = nullptr;  // null: not expanded (large clusters)
};

// "256 x H100 SXM5 80GB (dgx-h100-32node: nvlink 8 x 450 GB/s, ib 32 x 50 GB/s)"
std::string ClusterLine(const planner::PlanContext& ctx);

// The listed groups (or plans) of the ranked list, then the rejected schemes with their reasons.
std::string PlanTable(const planner::PlanContext& ctx, const planner::SearchResult& result,
                      const PlanListing& listing);
// With `explain`, the document also holds that plan's breakdown under "explain".
std::string PlanJson(const planner::PlanContext& ctx, const planner::SearchResult& result,
                     const PlanListing& listing, const ExplainedPlan* explain = nullptr);
std::string PlanCsv(const planner::PlanContext& ctx, const planner::SearchResult& result,
                    const PlanListing& listing);

// The [estimate] table stored in a plan file (informational).
std::string EstimateToml(const planner::Estimate& estimate);

}  // namespace meshplan::report
