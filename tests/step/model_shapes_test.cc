// A layer's parameters and GEMMs, and the model FLOPs as Megatron and NeMo count them.
#include "step/model_shapes.h"

#include <gtest/gtest.h>

namespace meshplan::step {
namespace {

ModelConfig Llama2_7b() {
  ModelConfig m;
  m.name = "llama-2-7b";
  m.q_heads = 32;
  m.kv_heads = 32;
  m.head_dim = 128;
  m.layers = 32;
  m.hidden_size = 4096;
  m.intermediate_size = 11008;
  m.vocab_size = 32000;
  m.tied_embeddings = false;
  return m;
}

TEST(ModelShapes, Llama2SevenBHasItsPublishedParameterCount) {
  // Llama-2-7b-hf has 6,738,415,616 parameters (the count reported for the checkpoint):
  // 32 layers of 202,383,360, the embedding and the untied output layer (32000 x 4096 each) and
  // the final norm (4096).
  const ModelConfig m = Llama2_7b();
  EXPECT_DOUBLE_EQ(LayerParams(m), 202383360.0);
  EXPECT_DOUBLE_EQ(32 * LayerParams(m) + EmbeddingParams(m) + OutputParams(m) + 4096, 6738415616.0);
  ModelConfig tied = m;
  tied.tied_embeddings = true;
  EXPECT_DOUBLE_EQ(OutputParams(tied), 0);
}

TEST(ModelShapes, FlopsFollowNemosLlamaFormula) {
  // NeMo's llama2 formula, written out independently: gbs s L h^2 (12 + 12 g/a + 18 f/h +
  // 12 s/h + 6 V / (L h)), for 1 sequence of 4096 tokens: 4096 x 32 x 4096^2 x (12 + 12 + 48.375
  // + 12 + 1.46484375) = 1.887648e14.
  const ModelConfig m = Llama2_7b();
  const double s = 4096, h = 4096, layers = 32;
  const double nemo =
      s * layers * h * h * (12 + 12 * 1.0 + 18 * 11008 / h + 12 * s / h + 6 * 32000 / (layers * h));
  EXPECT_NEAR(ModelFlops(m, 4096, 1), nemo, nemo * 1e-12);
  EXPECT_NEAR(ModelFlops(m, 4096, 128), 128 * nemo, 128 * nemo * 1e-12);
  // GQA (g/a = 1/8) lowers only the K, V projections' term: 12 x 7/8 h^2 per token and layer less.
  ModelConfig gqa = m;
  gqa.kv_heads = 4;
  EXPECT_NEAR(ModelFlops(m, 4096, 1) - ModelFlops(gqa, 4096, 1),
              12.0 * s * layers * h * h * (1.0 - 1.0 / 8), nemo * 1e-12);
}

TEST(ModelShapes, GemmsSplitAsMegatronSplitsThem) {
  // TP 4, 1024 tokens: QKV 1024 x (4096 + 2 x 4096)/4 x 4096; the output projection 1024 x 4096 x
  // 4096/4; FC1 (gate and up) 1024 x 2 x 11008/4 x 4096; FC2 1024 x 4096 x 11008/4.
  const LayerGemms g = LayerForwardGemms(Llama2_7b(), 1024, 4);
  EXPECT_EQ(g.qkv.m, 1024);
  EXPECT_EQ(g.qkv.n, 3072);
  EXPECT_EQ(g.qkv.k, 4096);
  EXPECT_EQ(g.proj.n, 4096);
  EXPECT_EQ(g.proj.k, 1024);
  EXPECT_EQ(g.fc1.n, 5504);
  EXPECT_EQ(g.fc2.k, 2752);
  // Forward GEMM FLOPs per token and layer, x 4 GPUs, are 2 x the layer's matrices' parameters.
  const double flops = g.qkv.flops() + g.proj.flops() + g.fc1.flops() + g.fc2.flops();
  EXPECT_NEAR(flops * 4 / 1024, 2 * (LayerParams(Llama2_7b()) - 2 * 4096), 1e-3);
}

}  // namespace
}  // namespace meshplan::step
