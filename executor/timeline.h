// A run's timeline summarised per rank, defined as the simulator's (sim::RankStats) so measured
// and predicted runs compare field by field: compute = compute-stream busy time (computes and
// merges), exposed communication = the rank's last op end - compute, idle = the run's end (the
// latest last op end) - the rank's last op end.
#pragma once

#include <vector>

#include "core/schedule.h"
#include "executor/run_options.h"

namespace meshplan::exec {

struct Spread {
  double min = 0, mean = 0, max = 0;
};
Spread SpreadOf(const std::vector<double>& values);

struct RunTimeline {
  double run_s = 0;  // latest op end over all ranks, from the run's start
  Spread compute, exposed, idle;
};

// From the measured [rank][op] times of a run of `schedule`.
RunTimeline MeasureTimeline(const Schedule& schedule, const std::vector<std::vector<OpTiming>>& timings);

}  // namespace meshplan::exec
