// The --explain breakdown of one plan: communication volumes, FLOPs, memory, the stages of the
// time model and the first ops of rank 0's expanded program, as text (table output) or as a JSON
// object inside `plan --format json` (docs/plan-output.md).
#pragma once

#include <string>

#include "core/base/json_writer.h"
#include "core/plan/schedule.h"
#include "planner/context.h"
#include "planner/estimate.h"

namespace meshplan::report {

// Ops of rank 0's program that a breakdown lists.
inline constexpr size_t kExplainedOps = 24;

// Step-by-step breakdown of plan number `plan_number` (its place in the full ranking); schedule
// may be null when expansion was skipped (large clusters).
std::string PlanExplain(const planner::PlanContext& ctx, const planner::Estimate& estimate,
                        int plan_number, const Schedule* schedule);

// The same breakdown as one JSON object value written to `json` (the caller writes its key).
void PlanExplainJson(const planner::PlanContext& ctx, const planner::Estimate& estimate,
                     int plan_number, const Schedule* schedule, JsonWriter& json);

}  // namespace meshplan::report
