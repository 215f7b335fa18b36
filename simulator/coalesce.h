// The simulator's timing view of a schedule: runs of compute ops that the replay would time
// exactly as one kernel of their summed work are merged into one op (issue 15), so the replay
// processes fewer events. Mesh-Attention at P ranks computes about P blocks per rank and pass;
// at 1024 and 4096 ranks the view has about 40% fewer events (sends of partials between the
// blocks of a step end runs), a tile's blocks after its all-gathers merge whole, and rings,
// whose every block waits on a message, merge nothing (docs/benchmarks.md).
//
// Compute op j (program order) joins the run that ends with compute op t when:
//   - j is the next op on the compute stream after t, a block of the same pass;
//   - every dependency of j is certain to have completed when the run's first op starts: it is a
//     member of the run, an op that precedes the run on the compute stream, or a dependency of such
//     an op or of the run's first op;
//   - every op that depends on t, other than j, also depends on j (so no op waits on a block
//     the merged op would finish later than t did).
// Then the run starts when its first op would have, each member would have started as the one
// before it ended, and the merged op (FLOPs summed, cut fraction weighted by FLOPs, `kernels`
// counted for the launch overheads) ends when the last member would have: the replay's times are
// those of the unmerged schedule, up to one nanosecond of rounding per merged op. Only for
// devices with one rank each: on a shared device kernels started later queue differently.
#pragma once

#include <cstdint>
#include <vector>

#include "core/plan/schedule.h"

namespace meshplan::sim {

struct CoalescedSchedule {
  Schedule schedule;  // the merged ops; messages, merges and collectives as they were
  // Per rank: the original ops of schedule op i are origin[r][begin[r][i] .. begin[r][i + 1]),
  // in program order (begin has one entry more than the rank's ops).
  std::vector<std::vector<uint32_t>> begin;
  std::vector<std::vector<uint32_t>> origin;
  int64_t merged_ops = 0;  // original compute ops folded into an earlier one
};

CoalescedSchedule CoalesceCompute(const Schedule& schedule);
// The same, freeing each rank's program of `schedule` once its view is made.
CoalescedSchedule CoalesceCompute(Schedule&& schedule);

// Builds the view one rank at a time, for an expansion that hands over each rank's program as
// soon as it is complete (planner::RankProgramHook) so that the whole schedule never exists:
// a rank's view depends on its own program only, so the result is CoalesceCompute's.
class CoalescingSink {
 public:
  explicit CoalescingSink(int64_t num_ranks);
  // Replaces `program` (rank `rank`'s, complete) with its view and keeps its origins.
  void Take(int64_t rank, RankProgram& program);
  // The view of `expanded`, whose programs every rank's Take replaced. REQUIRES: Take was called
  // for every rank of `expanded`, exactly once.
  CoalescedSchedule Finish(Schedule&& expanded);

 private:
  CoalescedSchedule out_;
};

}  // namespace meshplan::sim
