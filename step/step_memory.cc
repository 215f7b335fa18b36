#include "step/step_memory.h"

#include <algorithm>

#include "step/model_shapes.h"

namespace meshplan::step {
namespace {

constexpr double kBf16Bytes = 2;
constexpr double kFp32Bytes = 4;
// Megatron's distributed optimizer with bf16 parameters and fp32 gradients: 2 + 4 bytes per
// parameter on every GPU, and 12 (fp32 master copy, Adam's first and second moments) sharded over
// the data-parallel ranks (Megatron-LM docs/source/api-guide/dist_optimizer.md: 6 + 12/d bytes per
// parameter); with context parallelism the shards span DP x CP (its dp-cp group).
constexpr double kOptimizerBytesPerParam = 12;

}  // namespace

double LayerActivationBytesPerToken(const ModelConfig& m, int64_t tp, Recompute recompute) {
  const double h = static_cast<double>(m.hidden_size);
  const double t = static_cast<double>(tp);
  if (recompute == Recompute::kFull) return kBf16Bytes * h / t;  // the layer's input alone
  const double q = static_cast<double>(QueryWidth(m));
  const double kv = static_cast<double>(KvWidth(m));
  const double f = static_cast<double>(m.intermediate_size);
  // Attention half: the layer input and the norm's output (the QKV GEMM's input, kept as its
  // sequence-parallel shard), Q, K and V, the attention output O (the kernel's and the output
  // projection's input) and its fp32 log-sum-exp per query head.
  const double attention = kBf16Bytes * (2 * h + q + 2 * kv + q) + kFp32Bytes * m.q_heads;
  // MLP half: its input and the norm's output, FC1's output (gate and up), the activation's output.
  const double mlp = kBf16Bytes * (2 * h + static_cast<double>(Fc1Width(m)) + f);
  // Selective recompute (core_attn) frees nothing more: the flash kernel keeps no s x s tensor,
  // and Q, K, V and O are kept by the checkpoint and the output projection anyway.
  return (attention + mlp) / t;
}

StepMemory EstimateStepMemory(const ModelConfig& m, const StepOptions& o, int64_t seq,
                              double attention_peak_bytes) {
  const double t = static_cast<double>(o.tp);
  // The busiest stage's layers on the first stage too: exact for an even split, an upper bound
  // for an uneven one (whose first stage holds fewer).
  const int64_t stage_layers = (m.layers + o.pp - 1) / o.pp;
  const double layer_params = LayerParams(m) * static_cast<double>(stage_layers) / t;
  // The first stage holds the embedding; the last the final norm and the output layer (with tied
  // embeddings and PP > 1 Megatron keeps a copy of the embedding there for the output).
  const double first_params = layer_params + EmbeddingParams(m) / t;
  const double output = o.pp > 1 && m.tied_embeddings ? EmbeddingParams(m) : OutputParams(m);
  const double last_params = layer_params + (o.pp == 1 ? first_params - layer_params : 0) +
                             output / t + static_cast<double>(m.hidden_size);

  const double tokens =
      static_cast<double>(o.micro_batch) * static_cast<double>(seq) / static_cast<double>(o.cp);
  // 1F1B: the first stage keeps min(pp, micro-batches) micro-batches in flight, each its
  // stage's layers; interleaving adds (pp - 1) / (pp x vpp) of that (Korthikanti et al. 2022,
  // "Reducing Activation Recomputation in Large Transformer Models", section 4.2.3).
  const double in_flight = static_cast<double>(std::min(o.pp, o.micro_batches()));
  const double interleave =
      o.vpp > 1 ? 1.0 + static_cast<double>(o.pp - 1) / static_cast<double>(o.pp * o.vpp) : 1.0;
  const double per_layer = LayerActivationBytesPerToken(m, o.tp, o.recompute) * tokens;
  double first_activations = per_layer * static_cast<double>(stage_layers) * in_flight * interleave;
  // Full recompute rebuilds one layer's activations at a time in the backward.
  if (o.recompute == Recompute::kFull)
    first_activations += LayerActivationBytesPerToken(m, o.tp, Recompute::kNone) * tokens;
  // The last stage keeps one micro-batch (its forward is followed by its backward at once).
  const double last_activations = first_activations / in_flight / interleave;
  // The loss: bf16 logits and their fp32 softmax for the micro-batch's tokens, vocab / TP.
  const double logits = tokens * static_cast<double>(m.vocab_size) / t * (kBf16Bytes + kFp32Bytes);

  const double shards = static_cast<double>(o.dp * o.cp);
  auto state = [&](double params) {
    return params * (kBf16Bytes + o.grad_bytes_per_param() + kOptimizerBytesPerParam / shards);
  };
  const double first_total =
      state(first_params) + first_activations +
      (o.pp == 1 ? std::max(attention_peak_bytes, logits) : attention_peak_bytes);
  const double last_total =
      state(last_params) + last_activations + std::max(attention_peak_bytes, logits);
  const bool first_busier = first_total >= last_total;
  StepMemory mem;
  mem.params = first_busier ? first_params : last_params;
  mem.weights_bytes = mem.params * kBf16Bytes;
  mem.grads_bytes = mem.params * o.grad_bytes_per_param();
  mem.optimizer_bytes = mem.params * kOptimizerBytesPerParam / shards;
  mem.activations_bytes = first_busier ? first_activations : last_activations;
  const bool has_logits = !first_busier || o.pp == 1;
  mem.transient_bytes = has_logits ? std::max(attention_peak_bytes, logits) : attention_peak_bytes;
  mem.reserve_bytes = o.reserve_bytes;
  mem.besides_transient_bytes = mem.total_bytes() - mem.transient_bytes;
  return mem;
}

}  // namespace meshplan::step
