// Near ties: results within a stated relative tolerance of the best one are shown as ties, not as
// wins. The planner's estimates are a model; two schemes 0.1% apart are not meaningfully ranked.
#pragma once

#include <cstddef>
#include <vector>

namespace meshplan::report {

// The tolerance the charts state in their legends and docs: 0.5% of the best time.
inline constexpr double kTieRelativeTolerance = 0.005;

// True when `time_s` ties with `best_s`: time_s <= best_s * (1 + relative_tolerance).
// REQUIRES: best_s <= time_s, relative_tolerance >= 0.
bool TiesWithBest(double best_s, double time_s, double relative_tolerance = kTieRelativeTolerance);

// The fastest of `times_s` and the others that tie with it.
struct NearTies {
  size_t best = 0;           // index of the smallest time (the first of equal smallest ones)
  std::vector<size_t> tied;  // the other indices that tie with it, by time, then by index
};

// REQUIRES: !times_s.empty().
NearTies FindNearTies(const std::vector<double>& times_s,
                      double relative_tolerance = kTieRelativeTolerance);

}  // namespace meshplan::report
