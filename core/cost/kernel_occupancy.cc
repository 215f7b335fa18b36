#include "core/cost/kernel_occupancy.h"

namespace meshplan {
namespace {

double CeilDiv(int64_t a, int64_t b) { return static_cast<double>((a + b - 1) / b); }

double OccupancyFactor(const GpuSpec& gpu, int64_t tile_rows, int64_t ctas_per_sm,
                       int64_t batch_heads, int64_t block_tokens) {
  if (gpu.sm_count <= 0 || tile_rows <= 0 || batch_heads <= 0 || block_tokens <= 0) return 1.0;
  const double fill = WaveFill(gpu.sm_count, ctas_per_sm, tile_rows, batch_heads, block_tokens);
  const int64_t reference = gpu.occupancy.curve_batch_heads;
  const double curve_fill =
      reference > 0 ? WaveFill(gpu.sm_count, ctas_per_sm, tile_rows, reference, block_tokens) : 1.0;
  return fill / curve_fill;
}

}  // namespace

double WaveFill(int64_t sm_count, int64_t ctas_per_sm, int64_t tile_rows, int64_t batch_heads,
                int64_t rows) {
  if (sm_count <= 0 || ctas_per_sm <= 0 || tile_rows <= 0 || batch_heads <= 0 || rows <= 0)
    return 1.0;
  const int64_t slots = sm_count * ctas_per_sm;
  const int64_t ctas = batch_heads * static_cast<int64_t>(CeilDiv(rows, tile_rows));
  const double waves = CeilDiv(ctas, slots);
  return static_cast<double>(batch_heads) * static_cast<double>(rows) /
         (waves * static_cast<double>(slots) * static_cast<double>(tile_rows));
}

double ForwardOccupancyFactor(const GpuSpec& gpu, int64_t batch_heads, int64_t block_tokens) {
  return OccupancyFactor(gpu, gpu.occupancy.forward_tile_rows, gpu.occupancy.forward_ctas_per_sm,
                         batch_heads, block_tokens);
}

double BackwardOccupancyFactor(const GpuSpec& gpu, int64_t batch_heads, int64_t block_tokens) {
  return OccupancyFactor(gpu, gpu.occupancy.backward_tile_rows, gpu.occupancy.backward_ctas_per_sm,
                         batch_heads, block_tokens);
}

}  // namespace meshplan
