#include "executor/timeline.h"

#include <algorithm>

namespace meshplan::exec {

Spread SpreadOf(const std::vector<double>& values) {
  Spread s;
  if (values.empty()) return s;
  s.min = *std::min_element(values.begin(), values.end());
  s.max = *std::max_element(values.begin(), values.end());
  double sum = 0;
  for (double v : values) sum += v;
  s.mean = sum / static_cast<double>(values.size());
  return s;
}

RunTimeline MeasureTimeline(const Schedule& schedule,
                         const std::vector<std::vector<OpTiming>>& timings) {
  std::vector<double> compute, last_end;
  for (size_t r = 0; r < timings.size(); ++r) {
    const std::vector<Op>& ops = schedule.ranks[r].ops;
    double busy = 0, end = 0;
    for (size_t i = 0; i < timings[r].size() && i < ops.size(); ++i) {
      if (ops[i].stream == StreamId::kCompute) busy += timings[r][i].end_s - timings[r][i].start_s;
      end = std::max(end, timings[r][i].end_s);
    }
    compute.push_back(busy);
    last_end.push_back(end);
  }
  RunTimeline t;
  t.run_s = last_end.empty() ? 0 : *std::max_element(last_end.begin(), last_end.end());
  std::vector<double> exposed, idle;
  for (size_t r = 0; r < last_end.size(); ++r) {
    exposed.push_back(std::max(0.0, last_end[r] - compute[r]));
    idle.push_back(t.run_s - last_end[r]);
  }
  t.compute = SpreadOf(compute);
  t.exposed = SpreadOf(exposed);
  t.idle = SpreadOf(idle);
  return t;
}

}  // namespace meshplan::exec
