// The timing view (coalesce.h) in the replay's form (replay_program.h), made rank by rank during
// the expansion: each rank's program is replaced by its view, the view by its replay form, and
// both are freed at once, so that only the 16-byte replay ops and their states of every rank sit
// in memory together (issue 15: the view's 72-byte ops were the peak at 4096 ranks).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/plan/schedule.h"
#include "simulator/coalesce.h"
#include "simulator/replay_program.h"

namespace meshplan::sim {

struct ReplayView {
  // The expanded schedule's scheme, rank count, layout and groups; its programs are empty.
  Schedule header;
  std::vector<ReplayProgram> ranks;  // per rank, the replay form of its timing view
  // Per rank, the original ops of view op i: origin[r][begin[r][i] .. begin[r][i + 1])
  // (coalesce.h).
  std::vector<std::vector<uint32_t>> begin;
  std::vector<std::vector<uint32_t>> origin;
};

class ReplayViewSink {
 public:
  explicit ReplayViewSink(int64_t num_ranks);
  // Replaces `program` (rank `rank`'s, complete) with an empty one, keeping its view's replay
  // form and origins. An error (MakeReplayProgram's) is kept for Finish.
  void Take(int64_t rank, RankProgram& program);
  // REQUIRES: Take was called for every rank of `expanded`, exactly once. Returns the first
  // error Take met, if any.
  Result<ReplayView> Finish(Schedule&& expanded);

 private:
  int64_t num_ranks_;
  CoalescingSink views_;
  std::vector<ReplayProgram> ranks_;
  Status error_ = Status::Ok();
};

}  // namespace meshplan::sim
