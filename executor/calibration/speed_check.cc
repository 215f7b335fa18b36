#include "executor/calibration/speed_check.h"

#include <algorithm>

#include "executor/calibration/cpu_calibration.h"

namespace meshplan::exec {

double SpeedCheck::Ratio() const {
  return measured() ? 0.5 * (before_s + after_s) / calibration_s : 1.0;
}

double SpeedCheck::RunSpread() const {
  if (!measured()) return 0;
  return (std::max(before_s, after_s) - std::min(before_s, after_s)) / std::min(before_s, after_s);
}

SpeedCheck SpeedCheckFor(const CalibrationRecord& record) {
  SpeedCheck check;
  if (!record.has_reference()) return check;
  check.calibration_s = record.reference_block_s;
  check.calibration_spread = record.speed_spread;
  check.head_dim = record.reference_head_dim;
  return check;
}

Result<double> CpuReferenceBlockSeconds(int64_t head_dim) {
  // ReferenceBlockSeconds times the block the same way whatever `quick` says, so this time and
  // calibrate's are one measurement's.
  CpuCalibrationTarget target(head_dim, 1, /*quick=*/false);
  return target.ReferenceBlockSeconds();
}

}  // namespace meshplan::exec
