#include "planner/model_layers.h"

#include <algorithm>
#include <limits>

#include "planner/equivalence.h"
#include "planner/evaluate_plan.h"
#include "planner/strategy.h"

namespace meshplan::planner {

Result<ModelWorkloads> MakeModelWorkloads(const ModelConfig& model, const Workload& workload) {
  ModelWorkloads out;
  out.layers.global_layers = model.global_layers();
  if (model.window_layers == 0 || model.window >= workload.seq_len) {
    out.layers.global_layers = model.layers;
    return out;
  }
  if (workload.mask.kind != MaskKind::kCausal) {
    return Status::Invalid("--model " + model.name + ": " + std::to_string(model.window_layers) +
                           " of its layers attend through a " + std::to_string(model.window) +
                           "-token window, which meshplan cannot lay over --mask " +
                           workload.mask.ToString() + " (leave --mask causal)");
  }
  Workload w = workload;
  w.mask = Mask::Window(model.window);
  if (Status st = w.Validate(); !st.ok()) return st.WithContext("--model " + model.name);
  out.layers.window_layers = model.window_layers;
  out.window = w;
  return out;
}

void TimeModelLayers(const PlanContext* window_ctx, const ModelLayers& layers,
                     SearchResult* result) {
  const bool both = layers.global_layers > 0 && layers.window_layers > 0;
  for (Estimate& e : result->ranked) {
    // A layer's time as the ranking has it: simulated when the plan was replayed.
    const double layer_s = RankingSeconds(e);
    if (!both) {  // one kind of layer: `ctx` is that kind's
      e.model_layers_s = static_cast<double>(layers.global_layers + layers.window_layers) * layer_s;
      continue;
    }
    const SchemeParams& sliding = e.window_params ? *e.window_params : e.params;
    const Estimate w = EvaluatePlan(*window_ctx, *MakeStrategy(sliding.scheme), sliding);
    e.model_layers_s = w.valid ? static_cast<double>(layers.global_layers) * layer_s +
                                     static_cast<double>(layers.window_layers) * w.time_s
                               : std::numeric_limits<double>::infinity();
  }
  if (!both) return;
  std::stable_sort(result->ranked.begin(), result->ranked.end(),
                   [](const Estimate& x, const Estimate& y) {
                     if (x.fits != y.fits) return x.fits;
                     return x.model_layers_s < y.model_layers_s;
                   });
}

}  // namespace meshplan::planner
