// Where a run's time went, per op class: for every class of the schedule's ops, the sum over
// ranks of the ops' durations (executor/timing/op_durations.h) and the number of ops. One function
// serves the measured run (its OpTiming) and the simulator's replay (sim::OpTime converted to
// seconds), so the two compare class by class.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "core/plan/schedule.h"
#include "executor/timing/op_timing.h"

namespace meshplan::exec {

// The schedule's op kinds (core/plan/schedule.h OpKind), computes and merges split by Op::phase.
enum class OpClass : uint8_t {
  kComputeForward,
  kComputeBackward,
  kMergeForward,
  kMergeBackward,
  kSend,
  kRecv,
  kAllGather,
  kReduceScatter,
  kAllToAll,
};
inline constexpr size_t kNumOpClasses = static_cast<size_t>(OpClass::kAllToAll) + 1;

OpClass ClassOf(const Op& op);
// "compute fwd", "compute bwd", "merge fwd", "merge bwd", "send", "recv", "all-gather",
// "reduce-scatter", "all-to-all".
std::string_view OpClassName(OpClass op_class);

struct OpClassTimes {
  double sum_s = 0;  // sum over ranks of the class's op durations
  int64_t ops = 0;   // ops of the class that have a time
};
// Indexed by OpClass.
using OpClassTable = std::array<OpClassTimes, kNumOpClasses>;

// From the [rank][op] times of a run of `schedule`. Ranks and ops beyond `times` are not counted,
// so a count below the schedule's shows times that are missing.
OpClassTable OpClassTimesOf(const Schedule& schedule,
                            const std::vector<std::vector<OpTiming>>& times);

}  // namespace meshplan::exec
