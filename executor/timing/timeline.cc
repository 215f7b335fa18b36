#include "executor/timing/timeline.h"

#include <algorithm>
#include <utility>

#include "executor/timing/op_durations.h"

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

RunTimeline TimelineOfRanks(double run_s, std::vector<RankTimes> ranks,
                            std::optional<OpClassTable> op_classes) {
  std::vector<double> compute, exposed, idle;
  for (const RankTimes& r : ranks) {
    compute.push_back(r.compute_s);
    exposed.push_back(r.exposed_comm_s);
    idle.push_back(r.idle_s);
  }
  RunTimeline t;
  t.run_s = run_s;
  t.compute = SpreadOf(compute);
  t.exposed = SpreadOf(exposed);
  t.idle = SpreadOf(idle);
  t.ranks = std::move(ranks);
  t.op_classes = std::move(op_classes);
  return t;
}

RunTimeline MeasureTimeline(const Schedule& schedule,
                            const std::vector<std::vector<OpTiming>>& timings) {
  std::vector<RankTimes> ranks(timings.size());
  std::vector<double> last_end(timings.size(), 0.0);
  for (size_t r = 0; r < timings.size() && r < schedule.ranks.size(); ++r) {
    const std::vector<Op>& ops = schedule.ranks[r].ops;
    const std::vector<double> durations = OpDurationsS(schedule.ranks[r], timings[r]);
    for (size_t i = 0; i < durations.size(); ++i) {
      if (ops[i].stream == StreamId::kCompute) ranks[r].compute_s += durations[i];
      last_end[r] = std::max(last_end[r], timings[r][i].end_s);
    }
  }
  const double run_s = last_end.empty() ? 0 : *std::max_element(last_end.begin(), last_end.end());
  for (size_t r = 0; r < ranks.size(); ++r) {
    ranks[r].exposed_comm_s = std::max(0.0, last_end[r] - ranks[r].compute_s);
    ranks[r].idle_s = run_s - last_end[r];
  }
  return TimelineOfRanks(run_s, std::move(ranks), OpClassTimesOf(schedule, timings));
}

}  // namespace meshplan::exec
