// Benchmark runs of one execution (`meshplan execute --repeat N`): one untimed warm-up run when
// N > 1, then N timed runs of the same inputs, summarised by the median, min and max of their
// measured time (RunTimeline::run_s, the latest op end from the run's start, the time the
// simulator predicts). The runs themselves are made by Execute/RunJobRank (executor/plan_run.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "core/base/status.h"
#include "core/plan/schedule.h"
#include "executor/timing/op_timing.h"
#include "executor/timing/timeline.h"

namespace meshplan::exec {

inline constexpr int kMaxRepeat = 1000;

// kInvalidInput unless 1 <= n <= kMaxRepeat (the caller adds the flag's name).
Status CheckRepeat(int64_t n);

// Untimed runs before the timed ones: one when repeat > 1 (first-run allocations, caches and
// thread start-up stay out of the statistics), none for a single run.
int WarmUpRuns(int repeat);

struct RepeatStats {
  int n = 0;
  // The median of the times (the mean of the two middle ones when n is even), min and max, and
  // spread = (max - min) / median (0 when the median is 0).
  double median_s = 0, min_s = 0, max_s = 0, spread = 0;
  // Index (0-based, in run order) of the median run: the run whose time is the median, for even
  // n the lower of the two middle ones (ties: the earlier run). Its timeline is the one reported.
  size_t median_run = 0;
};
// `times_s` in run order; empty gives all zeros.
RepeatStats RepeatStatsOf(const std::vector<double>& times_s);

// Signed error of `measured` against `predicted`: (measured - predicted) / predicted, in percent
// (0 when predicted is not positive).
double ErrorPercent(double measured, double predicted);

// Called after each run: `run` is 0 for the warm-up, else 1..runs for the timed runs; `time_s` is
// that run's measured time (RunTimeline::run_s).
using RunObserver = std::function<void(int run, int runs, double time_s)>;

// The timed runs of an execution.
struct RepeatedRuns {
  int warm_up = 0;                     // untimed runs made first
  std::vector<RunTimeline> timelines;  // per timed run, in run order
  std::vector<double> wall_s;          // per timed run: its wall-clock time
  RepeatStats stats;                   // of timelines[i].run_s
  // The cores other processes used on average over the timed runs (ForeignCpuMeter,
  // executor/timing/foreign_load.h), and the machine's hardware threads; -1 and 0 where not
  // measured (an MPI job's other ranks are processes too).
  double foreign_cores = -1;
  int machine_cores = 0;

  std::vector<double> TimesS() const;
  const RunTimeline& MedianRun() const { return timelines[stats.median_run]; }
  double MedianWallS() const { return wall_s[stats.median_run]; }
};

// Builds the summary from each timed run's [rank][op] times and wall-clock time (same length).
RepeatedRuns SummarizeRuns(const Schedule& schedule, int warm_up,
                           const std::vector<std::vector<std::vector<OpTiming>>>& timings,
                           const std::vector<double>& wall_s);

}  // namespace meshplan::exec
