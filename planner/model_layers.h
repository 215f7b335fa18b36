// A model's attention layers under one context-parallel plan: the plan the search ranks serves
// every layer of the model, global and sliding-window alike (a job runs one CP configuration).
#pragma once

#include <cstdint>
#include <optional>

#include "core/base/status.h"
#include "core/workload/model_config.h"
#include "planner/context.h"
#include "planner/search.h"

namespace meshplan::planner {

struct ModelLayers {
  int64_t global_layers = 0;  // layers under the workload's own mask
  int64_t window_layers = 0;  // layers under a sliding window (window_ctx's mask)
};

// A model's layers as planned: the workload's own mask for its global layers, a window for the
// sliding ones (a window that reaches the whole sequence is the causal mask: those layers count
// as global).
struct ModelWorkloads {
  ModelLayers layers;
  std::optional<Workload> window;  // the sliding layers' workload, when there are such layers
};
// Errors: a sliding model with a mask other than causal (a window cannot be laid over it), named
// by --model and the model.
Result<ModelWorkloads> MakeModelWorkloads(const ModelConfig& model, const Workload& workload);

// Sets Estimate::model_layers_s of every ranked plan (estimated in the global layers' context):
// global_layers x its time (simulated when it was replayed: RankingSeconds) plus window_layers x
// the estimated time in `window_ctx` (the same workload and cluster under the window mask) of
// the plan those layers run (Estimate::window_params, else the plan itself). Layers of both kinds
// re-sort the ranking by that sum (fitting plans first, the estimated order on ties): the best plan
// is the best for the whole model. A plan that has no valid evaluation for the window layers ranks
// after the others with model_layers_s infinite. With one kind of layer, the ranking's context is
// that kind's and window_ctx is not used. REQUIRES: window_ctx != nullptr when both kinds are
// present.
void TimeModelLayers(const PlanContext* window_ctx, const ModelLayers& layers,
                     SearchResult* result);

}  // namespace meshplan::planner
