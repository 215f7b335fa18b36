#include "executor/timing/op_class_times.h"

#include <algorithm>

#include "executor/timing/op_durations.h"

namespace meshplan::exec {

OpClass ClassOf(const Op& op) {
  const bool backward = op.phase == Phase::kBackward;
  switch (op.kind) {
    case OpKind::kCompute:
      return backward ? OpClass::kComputeBackward : OpClass::kComputeForward;
    case OpKind::kMerge:
      return backward ? OpClass::kMergeBackward : OpClass::kMergeForward;
    case OpKind::kSend:
      return OpClass::kSend;
    case OpKind::kRecv:
      return OpClass::kRecv;
    case OpKind::kAllGather:
      return OpClass::kAllGather;
    case OpKind::kReduceScatter:
      return OpClass::kReduceScatter;
    case OpKind::kAllToAll:
      return OpClass::kAllToAll;
  }
  return OpClass::kComputeForward;
}

std::string_view OpClassName(OpClass op_class) {
  switch (op_class) {
    case OpClass::kComputeForward:
      return "compute fwd";
    case OpClass::kComputeBackward:
      return "compute bwd";
    case OpClass::kMergeForward:
      return "merge fwd";
    case OpClass::kMergeBackward:
      return "merge bwd";
    case OpClass::kSend:
      return "send";
    case OpClass::kRecv:
      return "recv";
    case OpClass::kAllGather:
      return "all-gather";
    case OpClass::kReduceScatter:
      return "reduce-scatter";
    case OpClass::kAllToAll:
      return "all-to-all";
  }
  return "?";
}

OpClassTable OpClassTimesOf(const Schedule& schedule,
                            const std::vector<std::vector<OpTiming>>& times) {
  OpClassTable table{};
  const size_t ranks = std::min(schedule.ranks.size(), times.size());
  for (size_t r = 0; r < ranks; ++r) {
    const std::vector<Op>& ops = schedule.ranks[r].ops;
    const std::vector<double> durations = OpDurationsS(schedule.ranks[r], times[r]);
    for (size_t i = 0; i < durations.size(); ++i) {
      OpClassTimes& c = table[static_cast<size_t>(ClassOf(ops[i]))];
      c.sum_s += durations[i];
      ++c.ops;
    }
  }
  return table;
}

}  // namespace meshplan::exec
