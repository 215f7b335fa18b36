// A dense decoder layer's sizes as a Megatron-style job splits them: the GEMMs one TP rank runs,
// the parameters each GPU holds, and the model FLOPs a framework reports (docs/training-step.md).
#pragma once

#include <cstdint>

#include "core/cost/gemm_time.h"
#include "core/workload/model_config.h"

namespace meshplan::step {

// Query and KV projection widths: heads x head dim (not always hidden_size: Gemma 2).
inline int64_t QueryWidth(const ModelConfig& m) { return m.q_heads * m.head_dim; }
inline int64_t KvWidth(const ModelConfig& m) { return m.kv_heads * m.head_dim; }
// The MLP's first GEMM's output width: gate and up (2 x intermediate) for a gated MLP.
inline int64_t Fc1Width(const ModelConfig& m) {
  return (m.gated_mlp ? 2 : 1) * m.intermediate_size;
}

// The forward GEMMs of one layer on one TP rank for `tokens` tokens (the micro-batch's tokens on
// its CP rank): QKV and FC1 column-parallel (outputs / tp), the output projection and FC2
// row-parallel (inputs / tp); with sequence parallelism the inputs are gathered to all `tokens`.
struct LayerGemms {
  GemmShape qkv, proj, fc1, fc2;
};
LayerGemms LayerForwardGemms(const ModelConfig& m, int64_t tokens, int64_t tp);
// The output layer's GEMM: tokens x hidden by hidden x vocab / tp.
GemmShape LogitsGemm(const ModelConfig& m, int64_t tokens, int64_t tp);

// Parameters of one decoder layer (the four projections, the MLP and both norms), of the
// embedding table, and of the output layer (0 when tied to the embedding).
double LayerParams(const ModelConfig& m);
double EmbeddingParams(const ModelConfig& m);
double OutputParams(const ModelConfig& m);

// The model FLOPs of one step of `sequences` sequences of `seq` tokens as Megatron-LM and NeMo
// count them (Megatron-LM megatron/training/training.py num_floating_point_operations; NeMo
// nemo/utils/flops_formulas.py llama2): 12 B s L h^2 [(1 + g/a + s/h) q/h + (f/h) x 3/2 for a
// gated MLP + V / (2 L h)], the attention counted over the full s x s square whatever the mask,
// the backward as twice the forward. Not the FLOPs the GPU runs (a causal mask does half).
double ModelFlops(const ModelConfig& m, int64_t seq, int64_t sequences);

}  // namespace meshplan::step
