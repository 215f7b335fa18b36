#include "report/runs/predicted_timeline.h"

#include <optional>
#include <utility>
#include <vector>

#include "executor/timing/op_class_times.h"
#include "simulator/sim_time.h"

namespace meshplan::report {

exec::RunTimeline PredictedTimeline(const sim::PlanSimulation& simulation) {
  const sim::SimResult& result = simulation.result;
  std::vector<exec::RankTimes> ranks;
  ranks.reserve(result.ranks.size());
  for (const sim::RankStats& s : result.ranks)
    ranks.push_back({s.compute_s, s.exposed_comm_s, s.idle_s});
  std::optional<exec::OpClassTable> op_classes;
  if (!result.op_times.empty()) {
    std::vector<std::vector<exec::OpTiming>> times(result.op_times.size());
    for (size_t r = 0; r < times.size(); ++r) {
      times[r].reserve(result.op_times[r].size());
      for (const sim::OpTime& t : result.op_times[r])
        times[r].push_back({sim::ToSeconds(t.start), sim::ToSeconds(t.end)});
    }
    op_classes = exec::OpClassTimesOf(simulation.schedule, times);
  }
  return exec::TimelineOfRanks(result.total_s, std::move(ranks), std::move(op_classes));
}

}  // namespace meshplan::report
