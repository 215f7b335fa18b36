// GEMM time: 2 m n k FLOPs at the sustained rate, scaled by the wave fill relative to 8192^3.
#include "core/cost/gemm_time.h"

#include <gtest/gtest.h>

namespace meshplan {
namespace {

GpuSpec Gpu(int64_t sms) {
  GpuSpec g;
  g.peak_tflops[DType::kBf16] = 1000;
  g.gemm_efficiency[DType::kBf16] = 0.5;
  g.sm_count = sms;
  g.launch_overhead_s = 0;
  return g;
}

TEST(GemmTime, LargeGemmRunsAtTheStatedFractionOfPeak) {
  // 2 x 8192^3 = 1.0995e12 FLOPs at 0.5 x 1000 TFLOP/s = 2.199 ms, whatever the SM count (the
  // rate is stated at this very shape).
  const GemmShape s{8192, 8192, 8192};
  const double expected = 2.0 * 8192.0 * 8192.0 * 8192.0 / 5e14;
  EXPECT_NEAR(GemmSeconds(Gpu(0), s, DType::kBf16), expected, expected * 1e-12);
  EXPECT_NEAR(GemmSeconds(Gpu(132), s, DType::kBf16), expected, expected * 1e-12);
}

TEST(GemmTime, OneTileFillsOneSmOfAWave) {
  // 8192 x 8192 is 64 x 32 = 2048 tiles of 128 x 256: 16 waves of 132 SMs, 2048 / 2112 full. One
  // 128 x 256 tile fills 1 / 132 of its wave: its rate is (1/132) / (2048/2112) = 1/128 of the
  // large GEMM's.
  const GpuSpec g = Gpu(132);
  EXPECT_NEAR(GemmWaveFill(g, {8192, 8192, 8192}), 2048.0 / 2112.0, 1e-12);
  EXPECT_NEAR(GemmWaveFill(g, {128, 256, 4096}), 1.0 / 132.0, 1e-12);
  const GemmShape tile{128, 256, 4096};
  const double large_rate = 5e14;
  EXPECT_NEAR(GemmSeconds(g, tile, DType::kBf16), tile.flops() / (large_rate / 128.0), 1e-15);
  // The tile either way round: 256 x 128 is one tile too.
  EXPECT_NEAR(GemmWaveFill(g, {256, 128, 4096}), 1.0 / 132.0, 1e-12);
}

TEST(GemmTime, ADtypeWithoutARateHasNone) {
  GpuSpec g = Gpu(132);
  EXPECT_TRUE(HasGemmRate(g, DType::kBf16));
  EXPECT_FALSE(HasGemmRate(g, DType::kFp8));
  g.gemm_efficiency[DType::kFp8] = 0.8;  // a fraction but no peak
  EXPECT_FALSE(HasGemmRate(g, DType::kFp8));
}

}  // namespace
}  // namespace meshplan
