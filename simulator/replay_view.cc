#include "simulator/replay_view.h"

#include <utility>

namespace meshplan::sim {

ReplayViewSink::ReplayViewSink(int64_t num_ranks)
    : num_ranks_(num_ranks), views_(num_ranks), ranks_(static_cast<size_t>(num_ranks)) {}

void ReplayViewSink::Take(int64_t rank, RankProgram& program) {
  views_.Take(rank, program);  // program is now the rank's view
  if (error_.ok()) {
    auto replay = MakeReplayProgram(program, rank, num_ranks_);
    if (replay.ok()) {
      ranks_[static_cast<size_t>(rank)] = std::move(replay).value();
    } else {
      error_ = replay.status();
    }
  }
  program = RankProgram{};  // the view's 72-byte ops are not read again
}

Result<ReplayView> ReplayViewSink::Finish(Schedule&& expanded) {
  if (!error_.ok()) return error_;
  CoalescedSchedule views = views_.Finish(std::move(expanded));
  ReplayView out;
  out.header = std::move(views.schedule);
  out.ranks = std::move(ranks_);
  out.begin = std::move(views.begin);
  out.origin = std::move(views.origin);
  return out;
}

}  // namespace meshplan::sim
