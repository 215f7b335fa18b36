// The planning flags every command that plans takes (plan, sweep, fit, bench), beside
// WorkloadFlags, TopologyFlag and the parallel degrees: --framework and --seq-round, and how the
// flags become one planner::PlanRequest (planner/plan_request.h).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "core/base/status.h"
#include "planner/plan_request.h"
#include "tools/cli_common.h"

namespace meshplan::tools {

struct PlanningFlags {
  std::string framework = "any";
  std::string seq_round;  // "" keeps --seq as given

  void Register(CLI::App& app);
  // Sets request->framework and request->seq_rounding. Errors name the flag.
  Status ApplyTo(planner::PlanRequest* request) const;
};

// One planning question from the flags of plan or fit: the cluster with its model flags, the
// workload (over --model's fields), the model, the degrees, --framework and --seq-round, the
// schemes (comma list, "" for all) and the memory held back. Errors name the flag or file.
Result<planner::PlanRequest> MakePlanRequest(const WorkloadFlags& workload,
                                             const TopologyFlag& topology,
                                             const ParallelDegrees& degrees,
                                             const PlanningFlags& planning,
                                             const std::string& schemes, double reserve_gib);

}  // namespace meshplan::tools
