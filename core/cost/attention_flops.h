// FLOPs of attention as FlashAttention and the Long-Context Attention Benchmark (LongCA, arXiv
// 2510.17896) count them: a forward is 4 * B * pairs * Hq * d (two matmuls of 2 FLOPs per
// multiply-add over the unmasked (q, k) pairs), a backward 2.5x that (its recomputation included).
// Every FLOP figure of meshplan, planned or measured, uses this count.
#pragma once

#include "core/workload/workload.h"

namespace meshplan {

inline constexpr double kBackwardFlopsFactor = 2.5;

// Forward FLOPs multiplier of a pass: 1 (fwd), 2.5 (bwd) or 3.5 (fwd+bwd).
inline double PassFlopsFactor(Pass pass) {
  return (HasForward(pass) ? 1.0 : 0.0) + (HasBackward(pass) ? kBackwardFlopsFactor : 0.0);
}

// The whole workload's FLOPs (its mask's unmasked pairs, every batch element and query head).
// REQUIRES: w.Validate().ok().
double WorkloadFlops(const Workload& w);

}  // namespace meshplan
