// The whole training step's time on a Megatron-style job: per micro-batch, each pipeline stage's
// layers (attention from the context-parallel plan, the GEMMs, the element-wise kernels, the TP
// collectives, recompute), the 1F1B pipeline and its bubble, the data-parallel gradient and
// parameter collectives with the exposed part of their overlap, and the optimizer
// (docs/training-step.md, "Time", derives each term).
#pragma once

#include <cstdint>

#include "core/cluster/topology.h"
#include "core/workload/model_config.h"
#include "step/step_options.h"

namespace meshplan::step {

// The attention of one micro-batch on one GPU, all the model's layers (the planner's
// Estimate::model_layers_s of the chosen plan) and the forward alone (what recompute runs again).
struct AttentionSeconds {
  double forward_backward_s = 0;
  double forward_s = 0;
};

// Seconds of one step on the slowest pipeline stage, by part. Parts per micro-batch are summed
// over the step's micro-batches; the bubble is the pipeline's idle share of the stage time.
struct StepTime {
  int64_t micro_batches = 0;
  double attention_s = 0;    // attention layers, forward and backward (the CP plan's time)
  double gemm_s = 0;         // projections, MLP and logits, forward and backward
  double elementwise_s = 0;  // norms, rotary, residuals, activation, loss, FP8 casts; launches
  double tp_comm_s =
      0;  // TP / sequence-parallel collectives not hidden (all of them without overlap)
  double recompute_s = 0;   // the forward work recompute runs again
  double pp_p2p_s = 0;      // stage-to-stage activations and gradients
  double pp_bubble_s = 0;   // (pp - 1) / vpp stage times of 1F1B's fill and drain
  double dp_exposed_s = 0;  // gradient reduce-scatter and parameter all-gather not hidden
  double optimizer_s = 0;   // Adam on the GPU's shard, at HBM bandwidth
  double step_s() const {
    return attention_s + gemm_s + elementwise_s + tp_comm_s + recompute_s + pp_p2p_s + pp_bubble_s +
           dp_exposed_s + optimizer_s;
  }
};

// `cluster`: the job's GPUs (o.gpus() of them; TP innermost, then CP, DP and PP outermost, as
// Megatron orders its groups by default). REQUIRES: m.RequireWholeModel() ok,
// ValidateStepOptions(o) ok, pp divides the layers, cluster.num_gpus() == o.gpus(), and
// HasGemmRate(cluster.gpu, o.gemm_dtype).
StepTime TimeStep(const ModelConfig& m, const StepOptions& o, const Topology& cluster, int64_t seq,
                  const AttentionSeconds& attention);

}  // namespace meshplan::step
