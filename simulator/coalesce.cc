#include "simulator/coalesce.h"

#include <algorithm>
#include <limits>

namespace meshplan::sim {
namespace {

struct RankResult {
  RankProgram program;
  std::vector<uint32_t> begin;
  std::vector<uint32_t> origin;
  int64_t merged = 0;
};

RankResult CoalesceRank(const RankProgram& in) {
  const uint32_t n = static_cast<uint32_t>(in.ops.size());
  RankResult out;
  // Dependents of every op (CSR), to check that nothing waits on a run's tail but its successor.
  std::vector<uint32_t> first(n + 1, 0);
  for (uint32_t i = 0; i < n; ++i) {
    const Op& op = in.ops[i];
    for (uint32_t d = 0; d < op.dep_count; ++d) ++first[in.deps[op.dep_begin + d] + 1];
  }
  for (uint32_t i = 0; i < n; ++i) first[i + 1] += first[i];
  std::vector<uint32_t> dependents(first[n]);
  {
    std::vector<uint32_t> fill(first.begin(), first.end() - 1);
    for (uint32_t i = 0; i < n; ++i) {
      const Op& op = in.ops[i];
      for (uint32_t d = 0; d < op.dep_count; ++d) dependents[fill[in.deps[op.dep_begin + d]]++] = i;
    }
  }
  // Whether every op that waits on `tail` is `op` or waits on `op` too. Both dependents lists
  // are ascending (filled in program order), so one merge walk over them answers it: scanning each
  // waiter's deps instead cost a run's length times a merge's deps (quadratic; issue 15's profile
  // of the 4096-rank expansion found it there).
  auto waiters_wait_on = [&](uint32_t tail, uint32_t op) {
    uint32_t k = first[op];
    const uint32_t end = first[op + 1];
    for (uint32_t t = first[tail]; t < first[tail + 1]; ++t) {
      const uint32_t waiter = dependents[t];
      if (waiter == op) continue;
      while (k < end && dependents[k] < waiter) ++k;
      if (k == end || dependents[k] != waiter) return false;
    }
    return true;
  };

  constexpr uint32_t kNoOp = std::numeric_limits<uint32_t>::max();
  std::vector<uint8_t> known(n, 0);    // complete whenever the open run's first op starts
  std::vector<uint32_t> index(n, 0);   // original op -> op of the output program
  std::vector<uint32_t> previous_run;  // original ops of the last compute-stream op emitted
  uint32_t run = kNoOp;                // output index of the open run (a compute op), if any
  uint32_t tail = kNoOp;               // its last original op
  double cut_flops = 0;                // sum of flops x cut_rows_per_pair of the open run
  std::vector<uint32_t> deps;
  out.program.ops.reserve(n);
  auto close_run = [&]() {
    if (run == kNoOp) return;
    Op& merged = out.program.ops[run];
    merged.cut_rows_per_pair =
        merged.flops > 0 ? static_cast<float>(cut_flops / merged.flops) : 0.0f;
  };
  for (uint32_t i = 0; i < n; ++i) {
    const Op& op = in.ops[i];
    const bool on_compute = op.stream == StreamId::kCompute;
    if (on_compute && run != kNoOp && op.kind == OpKind::kCompute) {
      const Op& head = out.program.ops[run];
      bool joins = head.phase == op.phase && head.kernels < std::numeric_limits<uint16_t>::max();
      for (uint32_t d = 0; joins && d < op.dep_count; ++d) {
        const uint32_t dep = in.deps[op.dep_begin + d];
        joins = known[dep] || index[dep] == run;
      }
      joins = joins && waiters_wait_on(tail, i);
      if (joins) {
        Op& merged = out.program.ops[run];
        merged.flops += op.flops;
        merged.bytes += op.bytes;  // ring-step partials (core/plan/schedule.h Op::bytes)
        merged.sliced_bytes += op.sliced_bytes;
        merged.kernels = static_cast<uint16_t>(merged.kernels + 1);
        cut_flops += op.flops * static_cast<double>(op.cut_rows_per_pair);
        index[i] = run;
        previous_run.push_back(i);
        tail = i;
        ++out.merged;
        continue;
      }
    }
    if (on_compute) {
      // A new compute-stream op: the ones before it on the stream, and its own dependencies, are
      // complete whenever it starts.
      close_run();
      for (uint32_t p : previous_run) known[p] = 1;
      previous_run.clear();
      for (uint32_t d = 0; d < op.dep_count; ++d) known[in.deps[op.dep_begin + d]] = 1;
    }
    deps.clear();
    for (uint32_t d = 0; d < op.dep_count; ++d) deps.push_back(index[in.deps[op.dep_begin + d]]);
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
    Op copy = op;
    copy.kernels = 1;
    const uint32_t at = out.program.Add(copy, deps);
    index[i] = at;
    if (on_compute) {
      previous_run.push_back(i);
      run = op.kind == OpKind::kCompute ? at : kNoOp;
      tail = i;
      cut_flops = op.flops * static_cast<double>(op.cut_rows_per_pair);
    }
  }
  close_run();
  // The view is smaller than the reservation (every op of the input): give the rest back.
  out.program.ops.shrink_to_fit();
  out.program.deps.shrink_to_fit();
  // Origins: the original ops of each output op, in program order (a run's members are not
  // contiguous in the original program: messages sit between them).
  const size_t m = out.program.ops.size();
  out.begin.assign(m + 1, 0);
  for (uint32_t i = 0; i < n; ++i) ++out.begin[index[i] + 1];
  for (size_t k = 0; k < m; ++k) out.begin[k + 1] += out.begin[k];
  out.origin.resize(n);
  std::vector<uint32_t> fill(out.begin.begin(), out.begin.end() - 1);
  for (uint32_t i = 0; i < n; ++i) out.origin[fill[index[i]]++] = i;
  return out;
}

}  // namespace

namespace {

// The view of `schedule`; `to_free` (null, or `schedule` itself) has each rank's program freed
// once its view is made.
CoalescedSchedule CoalesceRanks(const Schedule& schedule, Schedule* to_free) {
  CoalescedSchedule out;
  out.schedule.scheme = schedule.scheme;
  out.schedule.num_ranks = schedule.num_ranks;
  out.schedule.layout = schedule.layout;
  out.schedule.groups = schedule.groups;
  out.schedule.ranks.resize(schedule.ranks.size());
  out.begin.resize(schedule.ranks.size());
  out.origin.resize(schedule.ranks.size());
  for (size_t r = 0; r < schedule.ranks.size(); ++r) {
    RankResult rank = CoalesceRank(schedule.ranks[r]);
    if (to_free != nullptr) to_free->ranks[r] = RankProgram{};
    out.schedule.ranks[r] = std::move(rank.program);
    out.begin[r] = std::move(rank.begin);
    out.origin[r] = std::move(rank.origin);
    out.merged_ops += rank.merged;
  }
  return out;
}

}  // namespace

CoalescedSchedule CoalesceCompute(const Schedule& schedule) {
  return CoalesceRanks(schedule, nullptr);
}

CoalescedSchedule CoalesceCompute(Schedule&& schedule) {
  CoalescedSchedule out = CoalesceRanks(schedule, &schedule);
  schedule = Schedule{};
  return out;
}

CoalescingSink::CoalescingSink(int64_t num_ranks) {
  out_.begin.resize(static_cast<size_t>(num_ranks));
  out_.origin.resize(static_cast<size_t>(num_ranks));
}

void CoalescingSink::Take(int64_t rank, RankProgram& program) {
  RankResult view = CoalesceRank(program);
  program = std::move(view.program);
  out_.begin[static_cast<size_t>(rank)] = std::move(view.begin);
  out_.origin[static_cast<size_t>(rank)] = std::move(view.origin);
  out_.merged_ops += view.merged;
}

CoalescedSchedule CoalescingSink::Finish(Schedule&& expanded) {
  out_.schedule = std::move(expanded);
  return std::move(out_);
}

}  // namespace meshplan::sim
