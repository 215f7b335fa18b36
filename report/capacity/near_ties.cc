#include "report/capacity/near_ties.h"

#include <algorithm>

namespace meshplan::report {

bool TiesWithBest(double best_s, double time_s, double relative_tolerance) {
  return time_s <= best_s * (1.0 + relative_tolerance);
}

NearTies FindNearTies(const std::vector<double>& times_s, double relative_tolerance) {
  NearTies out;
  for (size_t i = 1; i < times_s.size(); ++i) {
    if (times_s[i] < times_s[out.best]) out.best = i;
  }
  for (size_t i = 0; i < times_s.size(); ++i) {
    if (i != out.best && TiesWithBest(times_s[out.best], times_s[i], relative_tolerance)) {
      out.tied.push_back(i);
    }
  }
  std::stable_sort(out.tied.begin(), out.tied.end(),
                   [&times_s](size_t a, size_t b) { return times_s[a] < times_s[b]; });
  return out;
}

}  // namespace meshplan::report
