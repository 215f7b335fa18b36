#include "executor/calibration/run_estimate.h"

#include <algorithm>
#include <thread>

#include "core/cost/attention_flops.h"
#include "executor/calibration/cpu_calibration.h"

namespace meshplan::exec {

Result<RunEstimate> EstimateCpuRuns(const Workload& w, int64_t ranks, int runs) {
  // One 512 x 512 full block of the workload's head dimension: large enough for the kernel's
  // steady rate, a few milliseconds to time.
  constexpr int64_t kProbeTokens = 512;
  CpuCalibrationTarget probe(w.head_dim, 1, /*quick=*/true);
  auto seconds = probe.KernelSeconds(BlockPiece::kFull, kProbeTokens, 1, /*backward=*/false, 1);
  if (!seconds.ok()) return seconds.status();
  RunEstimate e;
  const double probe_flops = 4.0 * kProbeTokens * kProbeTokens * static_cast<double>(w.head_dim);
  e.flops_per_s = *seconds > 0 ? probe_flops / *seconds : 0;
  const int64_t hardware = std::max(1u, std::thread::hardware_concurrency());
  e.cores = static_cast<int>(std::max<int64_t>(1, std::min(ranks, hardware)));
  e.seconds = e.flops_per_s > 0 ? WorkloadFlops(w) * runs / (e.flops_per_s * e.cores) : 0;
  return e;
}

}  // namespace meshplan::exec
