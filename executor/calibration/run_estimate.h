// A rough wall-clock estimate of CPU runs before they start, so a long `meshplan execute` says
// what it is in for: the workload's FLOPs (LongCA's count) over a forward kernel rate measured
// on this machine just now, on min(ranks, cores) cores. It leaves out communication, imbalance,
// masked-block overheads and the backward's lower rate, so it is a lower bound more than a
// prediction (the simulator on a calibrated topology is the prediction: docs/fidelity.md).
#pragma once

#include <cstdint>

#include "core/base/status.h"
#include "core/workload/workload.h"

namespace meshplan::exec {

struct RunEstimate {
  double seconds = 0;      // every run together
  double flops_per_s = 0;  // measured rate of one core
  int cores = 0;           // cores the ranks can use at once
};

// `runs` runs of `w` on `ranks` ranks (threads of this process).
Result<RunEstimate> EstimateCpuRuns(const Workload& w, int64_t ranks, int runs);

// Runs estimated above this many seconds get a note before they start.
inline constexpr double kLongRunSeconds = 10;

}  // namespace meshplan::exec
