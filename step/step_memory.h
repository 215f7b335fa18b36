// The whole model's memory on one GPU of a Megatron-style job: weights, gradients and the
// distributed optimizer's shard, the activations a pipeline stage keeps for its backward under
// each recompute choice, and the transients of the layer at work (docs/training-step.md,
// "Memory", derives each term).
#pragma once

#include <cstdint>
#include <string>

#include "core/workload/model_config.h"
#include "step/step_options.h"

namespace meshplan::step {

// Bytes on the GPU of the busiest pipeline stage (the larger of the first and the last).
struct StepMemory {
  double params = 0;             // parameters the GPU holds (its stage's layers / TP, embeddings)
  double weights_bytes = 0;      // bf16 parameters: 2 per parameter
  double grads_bytes = 0;        // main gradients: 4 per parameter (fp32), 2 reduced in bf16
  double optimizer_bytes = 0;    // fp32 master copy and Adam's two moments, sharded over DP x CP
  double activations_bytes = 0;  // saved for the backward, every micro-batch in flight
  double transient_bytes = 0;    // the layer at work: attention's buffers or the logits
  double reserve_bytes = 0;      // StepOptions::reserve_bytes
  double total_bytes() const {
    return weights_bytes + grads_bytes + optimizer_bytes + activations_bytes + transient_bytes +
           reserve_bytes;
  }
  // Everything but the transient: what the planner holds back beside an attention layer's peak
  // (PlanRequest::reserved_bytes), so that its plans fit with the whole model.
  double besides_transient_bytes = 0;
};

// Bytes one layer keeps for its backward per token of a micro-batch on one GPU (sequence
// parallelism splits the hidden-sized tensors over TP as the projections split the others).
double LayerActivationBytesPerToken(const ModelConfig& m, int64_t tp, Recompute recompute);

// The GPU's memory for sequences of `seq` tokens; `attention_peak_bytes` is the planner's peak
// for one attention layer of the context-parallel plan (its inputs, outputs and buffers).
// REQUIRES: m.RequireWholeModel() ok, ValidateStepOptions(o) ok, pp divides the layers.
StepMemory EstimateStepMemory(const ModelConfig& m, const StepOptions& o, int64_t seq,
                              double attention_peak_bytes);

}  // namespace meshplan::step
