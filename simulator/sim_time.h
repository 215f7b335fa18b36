// Simulated time: integer nanoseconds. Integer time keeps event order exact and runs
// reproducible; one nanosecond is far below every latency and kernel time modelled.
#pragma once

#include <cmath>
#include <cstdint>

namespace meshplan::sim {

using SimTime = int64_t;  // nanoseconds since the start of the replay
inline constexpr double kNanosecondsPerSecond = 1e9;

inline SimTime FromSeconds(double seconds) {
  return static_cast<SimTime>(std::llround(seconds * kNanosecondsPerSecond));
}
inline double ToSeconds(SimTime t) { return static_cast<double>(t) / kNanosecondsPerSecond; }

// The replay's horizon: 2^62 ns, about 146 years. A duration that would end past it (an absurd
// cluster or workload, or a rate of 0) is clamped to it, so that adding times never overflows,
// and a replay that reaches it fails.
inline constexpr SimTime kSimHorizon = SimTime{1} << 62;

// now + ns (rounded to the nearest nanosecond), or kSimHorizon when that is not before the
// horizon or ns is not a number. REQUIRES: 0 <= now <= kSimHorizon.
inline SimTime EndTime(SimTime now, double ns) {
  if (!(static_cast<double>(now) + ns + 0.5 < static_cast<double>(kSimHorizon))) return kSimHorizon;
  return now + static_cast<SimTime>(ns + 0.5);
}

}  // namespace meshplan::sim
