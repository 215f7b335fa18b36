// Kernel time model shared by the planner's estimates and the simulator's compute model.
#pragma once

#include <algorithm>
#include <cstdint>

#include "core/base/dtype.h"
#include "core/cluster/topology.h"
#include "core/cost/document_tiles.h"
#include "core/cost/kernel_occupancy.h"
#include "core/workload/workload.h"

namespace meshplan {

// The shape of a plan's kernel calls that their rate depends on: the blocks' shorter side (the
// curve's x, and the rows a CTA grid is cut into) and how many sequences x query heads one call
// covers (the rank's heads: all of them, or heads / U under head parallelism); 0 batch_heads:
// unknown, the curve's occupancy.
// On packed documents, the tile fills (core/cost/document_tiles.h): the share of the pair slots
// the kernel computes that are visible pairs, forward and backward (1: nothing modelled).
struct KernelShape {
  int64_t block_tokens = 1;
  int64_t batch_heads = 0;
  double forward_tile_fill = 1.0;
  double backward_tile_fill = 1.0;
};

// The shape of kernels of `batch_heads` sequences x heads that `calls` run on `layout`'s blocks
// under a mask of `mask_kind` (KernelShape): the layout's kernel block side, and on a doc-zigzag
// layout the documents' tile fills (DocumentTileFill, causal documents under
// MaskKind::kDocuments; O(documents) per call, more for kGatheredKeys: cache it). The planner
// (PlanContext::ShapeOf) and the simulator both make theirs here.
inline KernelShape MakeKernelShape(const GpuSpec& gpu, const ShardLayout& layout,
                                   int64_t batch_heads, MaskKind mask_kind, KernelCalls calls) {
  KernelShape shape{layout.KernelBlockTokens(), batch_heads};
  const TileFill fill = DocumentTileFill(gpu, layout, mask_kind == MaskKind::kDocuments, calls);
  shape.forward_tile_fill = fill.forward;
  shape.backward_tile_fill = fill.backward;
  return shape;
}

// FLOP rate of the GPU's active attention kernel (GpuSpec::attention_kernel) on calls of `shape`
// at `head_dim`: peak(dtype) * efficiency(block_tokens) * HeadDimRateFactor(head_dim) *
// ForwardOccupancyFactor(batch_heads, block_tokens) * forward_tile_fill. The planner and the
// simulator both take their forward rate from here.
inline double AttentionFlopsPerSecond(const GpuSpec& gpu, DType dtype, int64_t head_dim,
                                      KernelShape shape) {
  return gpu.PeakFlopsPerSecond(dtype) * gpu.Efficiency(shape.block_tokens) *
         gpu.HeadDimRateFactor(head_dim) *
         ForwardOccupancyFactor(gpu, shape.batch_heads, shape.block_tokens) *
         shape.forward_tile_fill;
}

// A backward kernel's FLOP rate over the forward's on calls of `shape`: the curve's
// backward_rate_ratio, moved by the two passes' different occupancy (the backward's CTAs cut the
// keys, the forward's the queries, into tiles of their own sizes), and by the two passes' tile
// fills on packed documents.
inline double BackwardRateRatio(const GpuSpec& gpu, KernelShape shape) {
  return gpu.backward_rate_ratio *
         BackwardOccupancyFactor(gpu, shape.batch_heads, shape.block_tokens) /
         ForwardOccupancyFactor(gpu, shape.batch_heads, shape.block_tokens) *
         shape.backward_tile_fill / shape.forward_tile_fill;
}

// Seconds to run `flops` of attention as `launches` kernels of `shape`, on a rank with a device
// of its own: flops / AttentionFlopsPerSecond + launches * launch overhead. A GPU without a peak
// for dtype contributes no FLOP time (callers reject such workloads first:
// Topology::SupportsDType).
inline double UnsharedKernelSeconds(const GpuSpec& gpu, DType dtype, int64_t head_dim, double flops,
                                    KernelShape shape, int64_t launches) {
  const double rate = AttentionFlopsPerSecond(gpu, dtype, head_dim, shape);
  return (rate > 0 ? flops / rate : 0.0) + static_cast<double>(launches) * gpu.launch_overhead_s;
}

// Seconds a ring step's partials of `bytes` take to cross HBM GpuSpec::ring_step_partial_passes
// times (their merge into the running partials, beyond the kernel). The planner charges it on
// every ring step after the first; the simulator on compute ops that carry partial bytes.
// 0 without passes (whatever the HBM bandwidth, so a hand-built GPU without one stays finite).
inline double RingStepPartialSeconds(const GpuSpec& gpu, double bytes) {
  if (gpu.ring_step_partial_passes <= 0 || bytes <= 0) return 0.0;
  return gpu.ring_step_partial_passes * bytes / gpu.hbm_bytes_per_s;
}

// Seconds a merge of an incoming partial of `bytes` takes on the compute stream (a Merge op: a
// ring's dK,dV hop, a tile's reduce-chain partial): one launch, both partials read and their sum
// written at HBM speed. The simulator charges it on every Merge op; the planner on the merges its
// estimate's steps hold (the ring pass, the double ring, the Mesh tile pass).
inline double PartialMergeSeconds(const GpuSpec& gpu, double bytes) {
  return gpu.launch_overhead_s + 3.0 * bytes / gpu.hbm_bytes_per_s;
}

// Seconds the partials of `sliced_bytes` (Op::sliced_bytes: a forward ring step's partials whose
// causal diagonal is strict) take to cross HBM GpuSpec::sliced_merge_passes more times: the
// library runs such a block on a slice of its rows and copies the merged slice back. Beside
// RingStepPartialSeconds, which charges those bytes' ordinary merge. 0 without passes.
inline double SlicedMergeSeconds(const GpuSpec& gpu, double sliced_bytes) {
  if (gpu.sliced_merge_passes <= 0 || sliced_bytes <= 0) return 0.0;
  return gpu.sliced_merge_passes * sliced_bytes / gpu.hbm_bytes_per_s;
}

// The framework's fixed time for a pass (Topology::framework): step_overhead_s per attention
// call, the forward and the backward being one call each. The planner adds it to every plan's
// time as a stage, the simulator to the replay's total.
inline double FrameworkOverheadSeconds(const Topology& topology, Pass pass) {
  const int calls = (HasForward(pass) ? 1 : 0) + (HasBackward(pass) ? 1 : 0);
  return topology.framework.step_overhead_s * static_cast<double>(calls);
}

// The last rank's lag behind fair sharing of an oversubscribed device, once per run of
// `run_s` seconds without it: GpuSpec::sharing_end_lag_s + sharing_end_lag_fraction x run_s; 0
// unless the device is shared by more ranks than it runs at full rate under processor sharing
// (serial sharing's staggered ends are modelled op by op). The planner adds it to every plan's
// time beside the framework's overhead, the simulator to the replay's total, each with its own
// lag-free time as run_s.
inline double SharedDeviceEndLagSeconds(const GpuSpec& gpu, double run_s) {
  if (gpu.sharing != DeviceSharing::kProcessor || gpu.ranks_per_device <= 1 ||
      static_cast<double>(gpu.ranks_per_device) <= gpu.concurrent_kernels) {
    return 0.0;
  }
  return gpu.sharing_end_lag_s + gpu.sharing_end_lag_fraction * std::max(0.0, run_s);
}

// The planner's kernel time: UnsharedKernelSeconds slowed by the ranks that share the device, all
// computing at once (GpuSpec::SharedComputeSlowdown). The simulator times kernels unshared and
// divides the device among the kernels actually running (simulator/shared_device.h).
inline double KernelSeconds(const GpuSpec& gpu, DType dtype, int64_t head_dim, double flops,
                            KernelShape shape, int64_t launches) {
  return UnsharedKernelSeconds(gpu, dtype, head_dim, flops, shape, launches) *
         gpu.SharedComputeSlowdown();
}

}  // namespace meshplan
