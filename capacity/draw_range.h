// How far calibrations of one machine disagree, as predictions: the range `calibrate --draws`
// records beside the combined file (CalibrationRecord::draw_low, draw_high) and every prediction
// on it is read against. Measured over probe plans like bench/calibration_repeatability.py's, the
// workloads a calibration is for: every plan the planner lists for them.
#pragma once

#include <cstdint>
#include <vector>

#include "core/base/dtype.h"
#include "core/base/status.h"
#include "core/cluster/topology.h"

namespace meshplan::capacity {

// The probe workloads: `tokens_per_rank` tokens on each of the topology's P ranks (one sequence),
// 2 query heads and 1 KV head a rank (so every scheme splits them at any P), `head_dim`, `dtype`;
// masks full and causal, passes fwd and fwd+bwd.
struct DrawProbe {
  int64_t tokens_per_rank = 2048;
  int64_t head_dim = 128;
  DType dtype = DType::kFp32;
};

struct DrawRange {
  // Over the probe plans: the median of min over draws of (draw's time / combined's time), at
  // most 1, and of the max, at least 1, 3 decimals (outwards).
  double low = 1, high = 1;
  int64_t plans = 0;  // probe plans every draw and the combined topology could time
};

// Every probe plan the planner lists (schemes, variants, placements; those that fit first) on
// `combined`, timed on each draw with the same parameters. kInvalidInput without draws, without a
// probe plan, or for a topology the probe's workload does not validate on.
Result<DrawRange> MeasureDrawRange(const std::vector<Topology>& draws, const Topology& combined,
                                   const DrawProbe& probe);

}  // namespace meshplan::capacity
