// How long each op of a run took, defined once for measured runs and simulated ones so that the
// two compare (executor/timing/op_class_times.h, executor/timing/timeline.h).
//
// An op's duration is the time it held its stream: from when it could run there to its end,
//   duration = end - max(start, end of the previous op on the same stream of the rank)
// (the previous op's end is 0, the run's start, for a stream's first op). OpTiming::start_s is
// when the op's deps were met (executor/device/run_options.h), which can be before its stream has
// finished the op ahead of it; the max takes that wait out, so the durations of one stream never
// overlap and add up to the stream's busy time. The simulator starts an op only when its deps are
// met and its stream is free, so for its times (sim::OpTime) the max changes nothing and the
// duration is end - start. For a receive or a collective the duration includes the wait for the
// peer (its data), as in both the executor and the simulator the op holds its stream meanwhile.
#pragma once

#include <vector>

#include "core/plan/schedule.h"
#include "executor/timing/op_timing.h"

namespace meshplan::exec {

// The durations of `program`'s ops, in seconds, from their times (same op order). Ops beyond
// `times` have none: the result has min(ops, times) entries. A negative interval (end before the
// effective start) counts as 0.
std::vector<double> OpDurationsS(const RankProgram& program, const std::vector<OpTiming>& times);

}  // namespace meshplan::exec
