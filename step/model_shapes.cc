#include "step/model_shapes.h"

namespace meshplan::step {

LayerGemms LayerForwardGemms(const ModelConfig& m, int64_t tokens, int64_t tp) {
  const int64_t h = m.hidden_size;
  LayerGemms g;
  g.qkv = {tokens, (QueryWidth(m) + 2 * KvWidth(m)) / tp, h};
  g.proj = {tokens, h, QueryWidth(m) / tp};
  g.fc1 = {tokens, Fc1Width(m) / tp, h};
  g.fc2 = {tokens, h, m.intermediate_size / tp};
  return g;
}

GemmShape LogitsGemm(const ModelConfig& m, int64_t tokens, int64_t tp) {
  return {tokens, m.vocab_size / tp, m.hidden_size};
}

double LayerParams(const ModelConfig& m) {
  const double h = static_cast<double>(m.hidden_size);
  const double q = static_cast<double>(QueryWidth(m));
  const double kv = static_cast<double>(KvWidth(m));
  const double f = static_cast<double>(m.intermediate_size);
  const double mlp_matrices = m.gated_mlp ? 3 : 2;
  return h * (q + 2 * kv) + q * h + mlp_matrices * h * f + 2 * h;
}

double EmbeddingParams(const ModelConfig& m) {
  return static_cast<double>(m.vocab_size) * static_cast<double>(m.hidden_size);
}

double OutputParams(const ModelConfig& m) { return m.tied_embeddings ? 0 : EmbeddingParams(m); }

double ModelFlops(const ModelConfig& m, int64_t seq, int64_t sequences) {
  const double h = static_cast<double>(m.hidden_size);
  const double s = static_cast<double>(seq);
  const double layers = static_cast<double>(m.layers);
  const double attention = (1.0 + static_cast<double>(m.kv_heads) / m.q_heads + s / h) *
                           (static_cast<double>(QueryWidth(m)) / h);
  const double mlp = static_cast<double>(m.intermediate_size) / h * (m.gated_mlp ? 1.5 : 1.0);
  const double logits = static_cast<double>(m.vocab_size) / (2.0 * layers * h);
  return 12.0 * static_cast<double>(sequences) * s * layers * h * h * (attention + mlp + logits);
}

}  // namespace meshplan::step
