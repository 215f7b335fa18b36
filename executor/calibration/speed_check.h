// The machine's speed at run time against its calibration's: `execute` on the CPU times the
// calibration's reference block (calibration.h, kReferenceBlockTokens) before and after its timed
// runs, and the ratio to the time calibrate recorded scales the prediction. On a machine whose
// speed moves by itself (a VM sharing its host's caches and memory with other tenants, which no
// meter inside the VM sees: docs/fidelity.md, "The machine's speed"), the error at the speed of
// the moment is the model's; the error at the calibration's speed is the model's and the machine's.
#pragma once

#include <cstdint>

#include "core/base/status.h"
#include "core/cluster/topology.h"
#include "executor/calibration/calibration.h"  // kReferenceBlockTokens

namespace meshplan::exec {

struct SpeedCheck {
  double calibration_s = 0;        // the block's time recorded by calibrate (0: no reference)
  double calibration_spread = -1;  // how far it moved while calibrate ran; < 0: not recorded
  int64_t head_dim = 0;
  double before_s = 0, after_s = 0;  // this run's, before and after the timed runs

  bool measured() const { return calibration_s > 0 && before_s > 0 && after_s > 0; }
  // The machine's time for the block now (the mean of before and after) over the calibration's:
  // above 1 the machine is slower than when it was calibrated. 1 when not measured.
  double Ratio() const;
  // How far the block moved between before and after, (max - min) / min (0 when not measured).
  double RunSpread() const;
};

// A check to fill for `record`: its reference, nothing measured yet (calibration_s 0 where the
// record has no reference).
SpeedCheck SpeedCheckFor(const CalibrationRecord& record);

// The reference block's time on this machine's CPU now, at `head_dim`, as calibrate times it.
Result<double> CpuReferenceBlockSeconds(int64_t head_dim);

}  // namespace meshplan::exec
