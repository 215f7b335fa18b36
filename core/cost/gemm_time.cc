#include "core/cost/gemm_time.h"

#include <algorithm>

namespace meshplan {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The useful share of the waves: the output's area in tiles (partial tiles count their part)
// over the SM slots of the waves its `tiles` take.
double FillFor(double useful_tiles, int64_t tiles, int64_t sms) {
  const int64_t waves = CeilDiv(tiles, sms);
  return useful_tiles / static_cast<double>(waves * sms);
}

}  // namespace

double GemmWaveFill(const GpuSpec& gpu, const GemmShape& shape) {
  if (gpu.sm_count <= 0) return 1.0;
  const double useful = static_cast<double>(shape.m) * static_cast<double>(shape.n) /
                        static_cast<double>(kGemmTileRows * kGemmTileCols);
  const int64_t tall = CeilDiv(shape.m, kGemmTileRows) * CeilDiv(shape.n, kGemmTileCols);
  const int64_t wide = CeilDiv(shape.m, kGemmTileCols) * CeilDiv(shape.n, kGemmTileRows);
  return std::max(FillFor(useful, tall, gpu.sm_count), FillFor(useful, wide, gpu.sm_count));
}

bool HasGemmRate(const GpuSpec& gpu, DType dtype) {
  return gpu.gemm_efficiency.count(dtype) > 0 && gpu.peak_tflops.count(dtype) > 0;
}

double GemmSeconds(const GpuSpec& gpu, const GemmShape& shape, DType dtype) {
  const GemmShape reference{kGemmReferenceSide, kGemmReferenceSide, kGemmReferenceSide};
  const double fill = GemmWaveFill(gpu, shape) / GemmWaveFill(gpu, reference);
  const double flops_per_s =
      gpu.peak_tflops.at(dtype) * 1e12 * gpu.gemm_efficiency.at(dtype) * fill;
  return shape.flops() / flops_per_s + gpu.launch_overhead_s;
}

}  // namespace meshplan
