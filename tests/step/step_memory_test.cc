// The whole model's memory per GPU, each term worked out by hand on a small model.
#include "step/step_memory.h"

#include <gtest/gtest.h>

namespace meshplan::step {
namespace {

// h 1024, 8 heads of 128 (no GQA), gated MLP of 4096, 4 layers, vocab 32000, untied.
ModelConfig Small() {
  ModelConfig m;
  m.name = "small";
  m.q_heads = 8;
  m.kv_heads = 8;
  m.head_dim = 128;
  m.layers = 4;
  m.hidden_size = 1024;
  m.intermediate_size = 4096;
  m.vocab_size = 32000;
  m.tied_embeddings = false;
  return m;
}

StepOptions Tp2Dp2() {
  StepOptions o;
  o.tp = 2;
  o.dp = 2;
  return o;
}

TEST(StepMemory, ActivationsPerTokenUnderEachRecompute) {
  // Per token and layer, bf16 unless said: attention half 2 x (2h + q + 2kv + q) = 2 x (2048 +
  // 1024 + 2048 + 1024) = 12288, plus the fp32 LSE 4 x 8 = 32; MLP half 2 x (2h + 2f + f) = 2 x
  // (2048 + 8192 + 4096) = 28672. Sum 40992; over TP 2: 20496. Selective (core_attn) keeps the
  // same; full keeps the layer's input, 2h / 2 = 1024.
  EXPECT_DOUBLE_EQ(LayerActivationBytesPerToken(Small(), 2, Recompute::kNone), 20496);
  EXPECT_DOUBLE_EQ(LayerActivationBytesPerToken(Small(), 2, Recompute::kSelective), 20496);
  EXPECT_DOUBLE_EQ(LayerActivationBytesPerToken(Small(), 2, Recompute::kFull), 1024);
}

TEST(StepMemory, EveryTermOfOneStageWorkedOut) {
  // Parameters on one GPU (PP 1 holds everything, TP 2 halves it): a layer is h(q + 2kv) + qh +
  // 3hf + 2h = 3145728 + 1048576 + 12582912 + 2048 = 16779264, x 4 layers / 2 = 33558528; the
  // embedding and the output layer 32000 x 1024 / 2 = 16384000 each; the final norm 1024.
  const double params = 33558528.0 + 16384000.0 + 16384000.0 + 1024.0;  // 66327552
  const StepMemory m = EstimateStepMemory(Small(), Tp2Dp2(), 2048, 0);
  EXPECT_DOUBLE_EQ(m.params, params);
  EXPECT_DOUBLE_EQ(m.weights_bytes, 2 * params);
  EXPECT_DOUBLE_EQ(m.grads_bytes, 4 * params);
  EXPECT_DOUBLE_EQ(m.optimizer_bytes, 12 * params / 2);  // sharded over DP 2 x CP 1
  // One micro-batch in flight: 20496 bytes x 2048 tokens x 4 layers.
  EXPECT_DOUBLE_EQ(m.activations_bytes, 20496.0 * 2048 * 4);
  // The loss: 2048 tokens x 32000 / 2 logits, bf16 and fp32 (6 bytes), larger than attention's 0.
  EXPECT_DOUBLE_EQ(m.transient_bytes, 2048.0 * 16000 * 6);
  EXPECT_DOUBLE_EQ(m.total_bytes(), 12 * params + 20496.0 * 2048 * 4 + 2048.0 * 16000 * 6);
  EXPECT_DOUBLE_EQ(m.besides_transient_bytes, m.total_bytes() - m.transient_bytes);
  // An attention layer whose peak is larger than the logits is the transient instead.
  EXPECT_DOUBLE_EQ(EstimateStepMemory(Small(), Tp2Dp2(), 2048, 1e9).transient_bytes, 1e9);
}

TEST(StepMemory, GradientsReducedInBf16TakeTwoBytesAParameter) {
  // The same stage as above with --grad-reduce-in-bf16: 2 bytes of gradient a parameter, not 4.
  StepOptions o = Tp2Dp2();
  o.grad_reduce_bf16 = true;
  const double params = 66327552.0;
  const StepMemory m = EstimateStepMemory(Small(), o, 2048, 0);
  EXPECT_DOUBLE_EQ(m.grads_bytes, 2 * params);
  EXPECT_DOUBLE_EQ(EstimateStepMemory(Small(), Tp2Dp2(), 2048, 0).total_bytes() - m.total_bytes(),
                   2 * params);
}

TEST(StepMemory, FullRecomputeKeepsInputsAndRebuildsOneLayer) {
  // Each of 4 layers keeps 1024 bytes a token, and one layer is rebuilt whole (20496): 2048 x
  // (4 x 1024 + 20496).
  StepOptions o = Tp2Dp2();
  o.recompute = Recompute::kFull;
  EXPECT_DOUBLE_EQ(EstimateStepMemory(Small(), o, 2048, 0).activations_bytes,
                   2048.0 * (4 * 1024 + 20496));
}

TEST(StepMemory, TheFirstPipelineStageKeepsPpMicroBatches) {
  // PP 2 with 8 micro-batches: the first stage keeps min(2, 8) = 2 micro-batches of its 2 layers;
  // with 2 virtual stages 1 + (2 - 1) / (2 x 2) = 1.25 times that (Korthikanti et al.). Its
  // parameters: 2 layers / TP 2 and the embedding (no output layer). A vocabulary of 1000 keeps
  // the last stage (one micro-batch, 2048 x 500 x 6 bytes of logits) the lighter one.
  ModelConfig model = Small();
  model.vocab_size = 1000;
  StepOptions o = Tp2Dp2();
  o.pp = 2;
  o.global_batch = 16;  // 16 / (DP 2 x micro-batch 1) = 8 micro-batches
  const StepMemory m = EstimateStepMemory(model, o, 2048, 0);
  EXPECT_DOUBLE_EQ(m.activations_bytes, 20496.0 * 2048 * 2 * 2);
  EXPECT_DOUBLE_EQ(m.params, 16779264.0 * 2 / 2 + 1000.0 * 1024 / 2);
  o.vpp = 2;
  EXPECT_DOUBLE_EQ(EstimateStepMemory(model, o, 2048, 0).activations_bytes,
                   20496.0 * 2048 * 2 * 2 * 1.25);
}

TEST(StepOptions, RefusesBatchesAndStagesThatDoNotDivide) {
  StepOptions o = Tp2Dp2();
  EXPECT_TRUE(ValidateStepOptions(o).ok());
  EXPECT_EQ(o.micro_batches(), 1);  // the default global batch: one micro-batch per DP rank
  o.global_batch = 3;               // not a multiple of DP 2 x micro-batch 1
  EXPECT_NE(ValidateStepOptions(o).message().find("--global-batch"), std::string::npos);
  o.global_batch = 0;
  o.vpp = 2;  // virtual stages without a pipeline
  EXPECT_NE(ValidateStepOptions(o).message().find("--vpp"), std::string::npos);
  o.vpp = 1;
  o.tp = 0;
  EXPECT_NE(ValidateStepOptions(o).message().find("--tp"), std::string::npos);
  EXPECT_FALSE(ParseRecompute("sometimes").ok());
  EXPECT_EQ(*ParseRecompute("full"), Recompute::kFull);
}

}  // namespace
}  // namespace meshplan::step

namespace meshplan::step {
namespace {

TEST(SplitLayers, UnevenStagesPutTheRestOnTheEnds) {
  // 126 layers over 16 stages: middles ceil(126/16) = 8, 14 of them 112, the ends share 14: 7 + 7
  // (Llama 3.1 405B as Meta ran it: 16 stages, 7 layers on the first and the last).
  StageLayers s = *SplitLayers(126, 16, 1);
  EXPECT_EQ(s.first, 7);
  EXPECT_EQ(s.middle, 8);
  EXPECT_EQ(s.last, 7);
  EXPECT_FALSE(s.even());
  // 32 over 3: middle 11, the ends 32 - 11 = 21: 11 + 10.
  s = *SplitLayers(32, 3, 1);
  EXPECT_EQ(s.first, 11);
  EXPECT_EQ(s.last, 10);
  EXPECT_TRUE(SplitLayers(32, 4, 2)->even());
  EXPECT_FALSE(SplitLayers(4, 8, 1).ok());   // more stages than layers
  EXPECT_FALSE(SplitLayers(30, 4, 2).ok());  // interleaving needs PP x VPP to divide
  // 10 over 4: middle 3, the ends 10 - 6 = 4: 2 + 2; 9 over 8: middle 2, the ends 9 - 12 < 0.
  EXPECT_EQ(SplitLayers(10, 4, 1)->first, 2);
  EXPECT_FALSE(SplitLayers(9, 8, 1).ok());
}

}  // namespace
}  // namespace meshplan::step
