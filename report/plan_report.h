// Rendering of `meshplan plan` results (the planner's search): ranked table, JSON, CSV, the
// --explain breakdown and the [estimate] table of a plan file.
#pragma once

#include <string>

#include "core/schedule.h"
#include "planner/context.h"
#include "planner/search.h"

namespace meshplan::report {

// `top` rows of the ranked list (0: all), then the rejected schemes with their reasons.
std::string PlanTable(const planner::PlanContext& ctx, const planner::SearchResult& result, int top);
std::string PlanJson(const planner::PlanContext& ctx, const planner::SearchResult& result, int top);
std::string PlanCsv(const planner::PlanContext& ctx, const planner::SearchResult& result, int top);

// Step-by-step breakdown of one plan: volumes, FLOPs, memory, the time stages, and the first
// steps of rank 0's expanded program (schedule may be null when expansion was skipped).
std::string PlanExplain(const planner::PlanContext& ctx, const planner::Estimate& estimate, int rank_in_list,
                          const Schedule* schedule);

// The [estimate] table stored in a plan file (informational).
std::string EstimateToml(const planner::Estimate& estimate);

}  // namespace meshplan::report
