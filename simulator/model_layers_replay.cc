#include "simulator/model_layers_replay.h"

#include "planner/model_layers.h"
#include "simulator/plan_simulation.h"

namespace meshplan::sim {

Result<ModelLayersReplay> ReplayModelLayers(const Plan& plan, const Topology& topology,
                                            const ModelConfig& model, double plan_layer_s) {
  MESHPLAN_ASSIGN_OR_RETURN(planner::ModelWorkloads layers,
                            planner::MakeModelWorkloads(model, plan.workload));
  double all = static_cast<double>(layers.layers.global_layers) * plan_layer_s;
  if (layers.window) {
    Plan windowed = plan;
    windowed.workload = *layers.window;
    auto replay = SimulatePlan(windowed, topology, SimOptions{});
    if (!replay.ok()) {
      return replay.status().WithContext("--model " + model.name + ": its " +
                                         std::to_string(model.window_layers) +
                                         " window layers under this plan");
    }
    all += static_cast<double>(layers.layers.window_layers) * replay->result.total_s;
  }
  return ModelLayersReplay{model.name, model.layers, all};
}

}  // namespace meshplan::sim
