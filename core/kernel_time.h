// Kernel time model shared by the planner's estimates and the simulator's compute model.
#pragma once

#include <cstdint>

#include "core/dtype.h"
#include "core/topology.h"

namespace meshplan {

// Seconds to run `flops` of attention as `launches` kernels whose blocks have `block_tokens`
// tokens on their shorter side, on a rank with a device of its own: flops / (peak(dtype) *
// efficiency(block_tokens)) + launches * launch overhead. A GPU without a peak for dtype
// contributes no FLOP time (callers reject such workloads first: Topology::SupportsDType).
inline double UnsharedKernelSeconds(const GpuSpec& gpu, DType dtype, double flops,
                                    int64_t block_tokens, int64_t launches) {
  const double rate = gpu.PeakFlopsPerSecond(dtype) * gpu.Efficiency(block_tokens);
  return (rate > 0 ? flops / rate : 0.0) + static_cast<double>(launches) * gpu.launch_overhead_s;
}

// The planner's kernel time: UnsharedKernelSeconds slowed by the ranks that share the device, all
// computing at once (GpuSpec::SharedComputeSlowdown). The simulator times kernels unshared and
// divides the device among the kernels actually running (simulator/shared_device.h).
inline double KernelSeconds(const GpuSpec& gpu, DType dtype, double flops, int64_t block_tokens,
                            int64_t launches) {
  return UnsharedKernelSeconds(gpu, dtype, flops, block_tokens, launches) *
         gpu.SharedComputeSlowdown();
}

}  // namespace meshplan
