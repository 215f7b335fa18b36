#include "executor/timing/repeat.h"

#include <algorithm>
#include <numeric>
#include <string>

namespace meshplan::exec {

Status CheckRepeat(int64_t n) {
  if (n < 1 || n > kMaxRepeat) {
    return Status::Invalid("must be a number of runs from 1 to " + std::to_string(kMaxRepeat) +
                           ", not " + std::to_string(n));
  }
  return Status::Ok();
}

int WarmUpRuns(int repeat) { return repeat > 1 ? 1 : 0; }

RepeatStats RepeatStatsOf(const std::vector<double>& times_s) {
  RepeatStats s;
  s.n = static_cast<int>(times_s.size());
  if (times_s.empty()) return s;
  // Run indices sorted by time, ties in run order.
  std::vector<size_t> order(times_s.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return times_s[a] < times_s[b]; });
  const size_t n = order.size();
  s.min_s = times_s[order.front()];
  s.max_s = times_s[order.back()];
  s.median_run = order[(n - 1) / 2];
  s.median_s =
      n % 2 == 1 ? times_s[s.median_run] : (times_s[order[n / 2 - 1]] + times_s[order[n / 2]]) / 2;
  s.spread = s.median_s > 0 ? (s.max_s - s.min_s) / s.median_s : 0;
  return s;
}

double ErrorPercent(double measured, double predicted) {
  return predicted > 0 ? (measured - predicted) / predicted * 100 : 0;
}

std::vector<double> RepeatedRuns::TimesS() const {
  std::vector<double> times;
  times.reserve(timelines.size());
  for (const RunTimeline& t : timelines) times.push_back(t.run_s);
  return times;
}

RepeatedRuns SummarizeRuns(const Schedule& schedule, int warm_up,
                           const std::vector<std::vector<std::vector<OpTiming>>>& timings,
                           const std::vector<double>& wall_s) {
  RepeatedRuns runs;
  runs.warm_up = warm_up;
  runs.wall_s = wall_s;
  for (const auto& run : timings) runs.timelines.push_back(MeasureTimeline(schedule, run));
  runs.wall_s.resize(runs.timelines.size(), 0.0);
  runs.stats = RepeatStatsOf(runs.TimesS());
  return runs;
}

}  // namespace meshplan::exec
