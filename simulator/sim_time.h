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

}  // namespace meshplan::sim
