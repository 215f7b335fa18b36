// The occupancy term (core/cost/kernel_occupancy.h): CTAs in waves over the SMs, derived by hand
// below, and checked against a published measurement no value was fitted on.
#include "core/cost/kernel_occupancy.h"

#include <gtest/gtest.h>

#include <string>

#include "core/cluster/topology_toml.h"
#include "core/cost/kernel_time.h"

namespace meshplan {
namespace {

// An H100-like GPU: 132 SMs; FlashAttention-2's tiles (128 query rows a CTA forward, 2 per SM;
// 128 key rows backward, 1 per SM); its curve measured at 64 sequences x heads.
GpuSpec Fa2Gpu() {
  GpuSpec gpu;
  gpu.sm_count = 132;
  gpu.occupancy = {128, 2, 128, 1, 64};
  gpu.backward_rate_ratio = 0.9;
  return gpu;
}

TEST(WaveFill, UsefulRowsOverTheSlotRowsOfEveryWave) {
  // 5 heads x 8192 rows / 128 = 320 CTAs on 132 x 2 = 264 slots: 2 waves,
  // 5 x 8192 / (2 x 264 x 128) = 40960 / 67584.
  EXPECT_DOUBLE_EQ(WaveFill(132, 2, 128, 5, 8192), 40960.0 / 67584.0);
  // 64 heads: 4096 CTAs, 16 waves: 64 x 8192 / (16 x 264 x 128) = 524288 / 540672.
  EXPECT_DOUBLE_EQ(WaveFill(132, 2, 128, 64, 8192), 524288.0 / 540672.0);
  // A last tile partly empty: 100 rows in one 128-row CTA on one slot.
  EXPECT_DOUBLE_EQ(WaveFill(1, 1, 128, 1, 100), 100.0 / 128.0);
  // Exactly full: 264 CTAs on 264 slots.
  EXPECT_DOUBLE_EQ(WaveFill(132, 2, 128, 264, 128), 1.0);
  // Nothing to model.
  EXPECT_DOUBLE_EQ(WaveFill(0, 2, 128, 5, 8192), 1.0);
  EXPECT_DOUBLE_EQ(WaveFill(132, 2, 0, 5, 8192), 1.0);
  EXPECT_DOUBLE_EQ(WaveFill(132, 2, 128, 0, 8192), 1.0);
}

TEST(OccupancyFactor, IsTheFillOverTheCurvesOwn) {
  const GpuSpec gpu = Fa2Gpu();
  // Forward: (40960 / 67584) / (524288 / 540672) = 0.60606 / 0.96970 = 0.625.
  EXPECT_NEAR(ForwardOccupancyFactor(gpu, 5, 8192), 0.625, 1e-12);
  // Backward: 320 CTAs on 132 slots, 3 waves: 40960 / (3 x 132 x 128) = 0.80808; the curve's 64
  // heads: 4096 CTAs, 32 waves: 524288 / (32 x 132 x 128) = 0.96970; factor 0.83333.
  EXPECT_NEAR(BackwardOccupancyFactor(gpu, 5, 8192), 0.8080808 / 0.9696970, 1e-6);
  // The curve's own heads: 1 exactly. Unknown heads (0): 1.
  EXPECT_DOUBLE_EQ(ForwardOccupancyFactor(gpu, 64, 8192), 1.0);
  EXPECT_DOUBLE_EQ(ForwardOccupancyFactor(gpu, 0, 8192), 1.0);
  // A backward's rate over the forward's moves by the two factors: 0.9 x 0.83333 / 0.625.
  EXPECT_NEAR(BackwardRateRatio(gpu, {8192, 5}), 0.9 * (0.8080808 / 0.9696970) / 0.625, 1e-6);
  // Without sm_count the tiles mean nothing.
  GpuSpec unknown = gpu;
  unknown.sm_count = 0;
  EXPECT_DOUBLE_EQ(ForwardOccupancyFactor(unknown, 5, 8192), 1.0);
  EXPECT_DOUBLE_EQ(BackwardRateRatio(unknown, {8192, 5}), 0.9);
}

TEST(OccupancyFactor, ShippedH800FilesFiveAgainst32HeadsMatchPublishedKernels) {
  // ring-flash-attention's README (b00d24d and 8996282), flash_attn on one H800, causal forward,
  // 8K tokens, d = 128: 2418.4 it/s with 5 heads and 591.5 with 32: 4 x 8192^2 x h x 128 / 2
  // FLOPs, so 207.8 and 325.2 TFLOP/s, a ratio of 0.639. Nothing was fitted on these. The model:
  // 320 CTAs on 264 slots (0.606) against 2048 on 264 (8 waves: 0.970), 0.625: within 5%.
  auto h800 = ParseTopologyToml(
      "name = \"x\"\ngpu = \"h800-sxm5\"\n[[level]]\nname = \"nvlink\"\nkind = \"switch\"\n"
      "group_size = 8\nbandwidth_GBps = 200\nlatency_us = 1\n",
      "x.toml");
  ASSERT_TRUE(h800.ok()) << h800.status().message();
  ASSERT_TRUE(h800->UseAttentionKernel("fa2").ok());
  const double measured = (2418.4 * 5) / (591.5 * 32);
  const double model = AttentionFlopsPerSecond(h800->gpu, DType::kBf16, 128, {8192, 5}) /
                       AttentionFlopsPerSecond(h800->gpu, DType::kBf16, 128, {8192, 32});
  EXPECT_NEAR(model, 0.625, 1e-3);
  EXPECT_NEAR(model / measured, 1.0, 0.05) << "model " << model << ", measured " << measured;
}

TEST(OccupancyToml, OutOfRangeValuesNameTheirKey) {
  const std::string head =
      "name = \"x\"\n[gpu]\ncatalog = \"h100-sxm5\"\n[gpu.attention_kernels.fa2]\n";
  const std::string level =
      "[[level]]\nname = \"nvlink\"\nkind = \"switch\"\ngroup_size = 8\nbandwidth_GBps = 450\n"
      "latency_us = 1\n";
  auto bad_ctas =
      ParseTopologyToml(head + "occupancy = { forward_ctas_per_sm = 0 }\n" + level, "x.toml");
  ASSERT_FALSE(bad_ctas.ok());
  EXPECT_EQ(bad_ctas.status().message(),
            "x.toml: gpu.attention_kernels.fa2.occupancy.forward_ctas_per_sm: must be in 1..64");
  auto unknown = ParseTopologyToml(head + "occupancy = { tile_rows = 64 }\n" + level, "x.toml");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("unknown key 'gpu.attention_kernels.fa2.occupancy."
                                            "tile_rows'"),
            std::string::npos)
      << unknown.status().message();
  auto sms = ParseTopologyToml(
      "name = \"x\"\n[gpu]\ncatalog = \"h100-sxm5\"\nsm_count = -1\n" + level, "x.toml");
  ASSERT_FALSE(sms.ok());
  EXPECT_EQ(sms.status().message(), "x.toml: gpu.sm_count: must be in 0..100000 (0: not stated)");
  // Tables (inline ones too) merge key by key over the catalog entry's, so an override of one
  // occupancy key keeps the entry's others (fa2 on H100: 2 CTAs per SM, curve at 64 heads).
  auto merged =
      ParseTopologyToml(head + "occupancy = { forward_tile_rows = 64 }\n" + level, "x.toml");
  ASSERT_TRUE(merged.ok()) << merged.status().message();
  const KernelOccupancy& o = merged->gpu.attention_kernels.at("fa2").occupancy;
  EXPECT_EQ(o.forward_tile_rows, 64);
  EXPECT_EQ(o.forward_ctas_per_sm, 2);
  EXPECT_EQ(o.curve_batch_heads, 64);
}

}  // namespace
}  // namespace meshplan
