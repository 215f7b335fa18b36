#include "executor/timing/op_durations.h"

#include <algorithm>
#include <array>

namespace meshplan::exec {

std::vector<double> OpDurationsS(const RankProgram& program, const std::vector<OpTiming>& times) {
  constexpr size_t kStreams = static_cast<size_t>(StreamId::kCollective) + 1;
  std::array<double, kStreams> stream_free_s{};  // end of the stream's latest op so far
  const size_t n = std::min(program.ops.size(), times.size());
  std::vector<double> durations(n, 0.0);
  for (size_t i = 0; i < n; ++i) {
    double& free_s = stream_free_s[static_cast<size_t>(program.ops[i].stream)];
    const double start_s = std::max(times[i].start_s, free_s);
    durations[i] = std::max(0.0, times[i].end_s - start_s);
    free_s = std::max(free_s, times[i].end_s);
  }
  return durations;
}

}  // namespace meshplan::exec
