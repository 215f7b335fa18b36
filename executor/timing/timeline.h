// A run's timeline summarised per rank, defined as the simulator's (sim::RankStats) so measured
// and predicted runs compare field by field: compute = compute-stream busy time (computes and
// merges: the sum of their durations, executor/timing/op_durations.h), exposed communication = the
// rank's last op end - compute, idle = the run's end (the latest last op end) - the rank's last
// op end. Per op class, the sums of op durations (executor/timing/op_class_times.h).
#pragma once

#include <optional>
#include <vector>

#include "core/plan/schedule.h"
#include "executor/timing/op_class_times.h"
#include "executor/timing/op_timing.h"

namespace meshplan::exec {

struct Spread {
  double min = 0, mean = 0, max = 0;
};
Spread SpreadOf(const std::vector<double>& values);

struct RankTimes {
  double compute_s = 0;       // compute-stream busy time
  double exposed_comm_s = 0;  // the rank's last op end - compute_s (never negative)
  double idle_s = 0;          // the run's end - the rank's last op end
  // compute + exposed communication: the rank's last op end (or its compute time, were that
  // ever later).
  double BusyS() const { return compute_s + exposed_comm_s; }
};

struct RunTimeline {
  double run_s = 0;               // latest op end over all ranks, from the run's start
  Spread compute, exposed, idle;  // over `ranks`
  std::vector<RankTimes> ranks;   // per rank, in schedule rank order
  // Per op class; absent when the per-op times are unknown (a prediction made without them).
  std::optional<OpClassTable> op_classes;
};

// The timeline of per-rank times: `ranks` kept and their spreads taken.
RunTimeline TimelineOfRanks(double run_s, std::vector<RankTimes> ranks,
                            std::optional<OpClassTable> op_classes);

// From the measured [rank][op] times of a run of `schedule`.
RunTimeline MeasureTimeline(const Schedule& schedule,
                            const std::vector<std::vector<OpTiming>>& timings);

}  // namespace meshplan::exec
