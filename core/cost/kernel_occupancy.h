// How fully an attention kernel's CTAs fill the GPU's SMs, from the library's tile shapes
// (KernelOccupancy) and the GPU's SM count: few heads per GPU (TP x CP, Ulysses) leave SMs idle in
// a kernel's last wave, which the measured rate curve (taken at many heads) does not show.
// docs/planner-model.md, "Occupancy".
#pragma once

#include <cstdint>

#include "core/cluster/topology.h"

namespace meshplan {

// Fraction of the CTA slots a kernel keeps busy over its waves: `batch_heads` x ceil(rows /
// tile_rows) CTAs of tile_rows rows each, `sm_count` x `ctas_per_sm` slots, in ceil(CTAs / slots)
// waves; useful rows over slot-rows, so a last tile partly empty counts too:
//   batch_heads x rows / (waves x slots x tile_rows).
// 1 when any size is not positive (nothing to model).
double WaveFill(int64_t sm_count, int64_t ctas_per_sm, int64_t tile_rows, int64_t batch_heads,
                int64_t rows);

// The rate of a kernel of `batch_heads` sequences x heads on blocks of `block_tokens` rows over
// the curve's own at that size (measured with KernelOccupancy::curve_batch_heads, or at full
// occupancy): WaveFill(batch_heads) / WaveFill(curve_batch_heads), forward tiles for the forward,
// backward tiles (key rows) for the backward. 1 where the GPU or library does not state its
// tiles, or batch_heads is 0 (unknown).
double ForwardOccupancyFactor(const GpuSpec& gpu, int64_t batch_heads, int64_t block_tokens);
double BackwardOccupancyFactor(const GpuSpec& gpu, int64_t batch_heads, int64_t block_tokens);

}  // namespace meshplan
