// How much of the machine other processes took while a test timed something (issue 48): the
// tests that time this machine compare their timings only when it was quiet, and otherwise say
// so and skip, since a busy machine measures the other work, not the code under test. The
// measure is the one `meshplan execute` and `calibrate` use (executor/timing/foreign_load.h).
#pragma once

#include <algorithm>

#include "executor/timing/foreign_load.h"

namespace meshplan::testing {

// Other processes may take at most this many cores while a timing is compared.
inline constexpr double kQuietForeignCores = exec::kDisturbingForeignCores;

// The CPU time other processes used while `phase` ran, in cores (exec::ForeignCpuMeter); 0 where
// /proc/stat cannot be read.
template <typename Phase>
double ForeignCores(Phase phase) {
  const exec::ForeignCpuMeter meter;
  phase();
  return std::max(0.0, meter.Cores());
}

}  // namespace meshplan::testing
