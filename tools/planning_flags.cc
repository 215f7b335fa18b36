#include "tools/planning_flags.h"

#include <utility>

#include "core/base/units.h"
#include "planner/schemes/registry.h"

namespace meshplan::tools {

void PlanningFlags::Register(CLI::App& app) {
  app.add_option("--seq-round", seq_round,
                 "Round --seq to the nearest length every layout splits on this cluster (a "
                 "multiple of 2 x GPUs): up or down; a note says what it became");
  app.add_option("--framework", framework,
                 "Keep the plans this framework runs and print its settings for the best: "
                 "megatron, yunchang, internevo, magi or any (docs/frameworks.md)")
      ->capture_default_str();
}

Status PlanningFlags::ApplyTo(planner::PlanRequest* request) const {
  MESHPLAN_ASSIGN_OR_RETURN(request->framework, planner::ParseFramework(framework));
  MESHPLAN_ASSIGN_OR_RETURN(request->seq_rounding, planner::ParseSeqRounding(seq_round));
  return Status::Ok();
}

Result<planner::PlanRequest> MakePlanRequest(const WorkloadFlags& workload,
                                             const TopologyFlag& topology,
                                             const ParallelDegrees& degrees,
                                             const PlanningFlags& planning,
                                             const std::string& schemes, double reserve_gib) {
  planner::PlanRequest request;
  MESHPLAN_RETURN_IF_ERROR(planning.ApplyTo(&request));
  // The framework's refusal comes before the workload's (a magi plan fails whatever the sizes).
  if (std::string why = planner::FrameworkUnsupported(request.framework); !why.empty())
    return Status::Invalid(why);
  MESHPLAN_ASSIGN_OR_RETURN(request.workload, workload.Build());
  request.partial_dtype_given = workload.Given("--partial-dtype");
  request.attention_kernel_given = !topology.model.attention_kernel.empty();
  MESHPLAN_ASSIGN_OR_RETURN(request.model, workload.Model());
  MESHPLAN_ASSIGN_OR_RETURN(request.topology, topology.Load());
  request.degrees = degrees;
  MESHPLAN_RETURN_IF_ERROR(CheckReserveGiB(reserve_gib).WithContext("--reserve-gib"));
  request.reserved_bytes = reserve_gib * kGiB;
  for (const std::string& name : SplitList(schemes)) {
    auto scheme = planner::ParseScheme(name);
    if (!scheme.ok()) return scheme.status().WithContext("--schemes");
    request.search.schemes.push_back(*scheme);
  }
  return request;
}

}  // namespace meshplan::tools
