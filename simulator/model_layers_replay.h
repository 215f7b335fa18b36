// A model's attention layers under one plan, replayed: the plan serves every layer of the model
// (a job runs one CP configuration), the global layers under the plan's own workload and the
// sliding ones under their window (planner/model_layers.h decides which is which).
#pragma once

#include <string>

#include "core/base/status.h"
#include "core/cluster/topology.h"
#include "core/plan/plan.h"
#include "core/workload/model_config.h"

namespace meshplan::sim {

struct ModelLayersReplay {
  std::string model;        // its name
  int64_t layers = 0;       // all its layers
  double all_layers_s = 0;  // every attention layer of one training step
};

// global layers x `plan_layer_s` (the plan's own replay, given by the caller who ran it) plus
// window layers x a replay of the plan under the window. Errors: the model cannot take the plan's
// mask (MakeModelWorkloads), the window replay's (naming the model and its window layers).
Result<ModelLayersReplay> ReplayModelLayers(const Plan& plan, const Topology& topology,
                                            const ModelConfig& model, double plan_layer_s);

}  // namespace meshplan::sim
