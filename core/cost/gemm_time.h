// A GEMM's time on one GPU: its 2 m n k FLOPs at the dtype's sustained large-GEMM rate
// (GpuSpec::gemm_efficiency of peak_tflops), scaled by how fully its output tiles fill the SMs'
// waves relative to the large GEMM the rate was measured on, plus one launch. The whole training
// step's projections, MLP and logits are timed here (step/).
#pragma once

#include <cstdint>

#include "core/base/dtype.h"
#include "core/cluster/topology.h"

namespace meshplan {

// C (m x n) = A (m x k) B (k x n).
struct GemmShape {
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  double flops() const {
    return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  }
};

// The output tile of cuBLAS's large Hopper/Ampere GEMM kernels, 128 x 256 (either way round),
// one CTA per SM: the unit of the wave fill below.
inline constexpr int64_t kGemmTileRows = 128;
inline constexpr int64_t kGemmTileCols = 256;
// The shape gemm_efficiency's wave fill is relative to (8192^3; correcting the measured medians
// over the models' shapes for their wave fill moves them by under 1%).
inline constexpr int64_t kGemmReferenceSide = 8192;

// The output's area in tiles over the SM slots of the waves its tiles take (waves x SMs), for the
// better orientation of the tile; 1 when the GPU states no SM count.
double GemmWaveFill(const GpuSpec& gpu, const GemmShape& shape);

// Whether gpu states a GEMM rate for dtype.
bool HasGemmRate(const GpuSpec& gpu, DType dtype);

// REQUIRES: HasGemmRate(gpu, dtype), positive sizes.
double GemmSeconds(const GpuSpec& gpu, const GemmShape& shape, DType dtype);

}  // namespace meshplan
