#include "executor/calibration/engine_calibration.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <thread>

#include "executor/io/input_source.h"

namespace meshplan::exec {
namespace {

// Work per rank and run that KernelSeconds aims for: on a CPU enough to average the scheduler's
// time slices out (as CpuCalibrationTarget does), on a GPU enough that the ranks' staggered starts
// (the host issues one rank's ops after another's, microseconds each) stay a few percent of it.
double MinRankWorkSeconds(Backend backend, bool quick) {
  if (backend == Backend::kCpu) return quick ? 0.02 : 0.04;
  return quick ? 0.002 : 0.005;
}
constexpr int kMaxInner = 512;

// Timed runs per sample: blocks beyond kAllPiecesTokens once per call (their runs take seconds on
// a CPU; the calibration's rounds give their median).
int TimedRuns(int64_t n, bool quick) {
  if (n > kAllPiecesTokens) return 1;
  return quick ? 3 : 5;
}

constexpr uint64_t kInputSeed = 1;

Status CheckTimed(const std::vector<std::vector<OpTiming>>& timings,
                  const std::vector<std::vector<uint32_t>>& timed) {
  if (timings.size() != timed.size()) return Status::Internal("calibration: a rank has no timings");
  for (size_t r = 0; r < timed.size(); ++r) {
    for (uint32_t op : timed[r]) {
      if (op >= timings[r].size())
        return Status::Internal("calibration: rank " + std::to_string(r) + " has no time for op " +
                                std::to_string(op));
    }
  }
  return Status::Ok();
}

}  // namespace

double TimedWindowSeconds(const std::vector<std::vector<OpTiming>>& timings,
                          const std::vector<std::vector<uint32_t>>& timed) {
  double first = std::numeric_limits<double>::infinity(), last = 0;
  for (size_t r = 0; r < timed.size() && r < timings.size(); ++r) {
    for (uint32_t op : timed[r]) {
      if (op >= timings[r].size()) continue;
      first = std::min(first, timings[r][op].start_s);
      last = std::max(last, timings[r][op].end_s);
    }
  }
  return std::isfinite(first) ? std::max(0.0, last - first) : 0.0;
}

EngineCalibrationTarget::EngineCalibrationTarget(ExecuteConfig config, int64_t head_dim,
                                                 int64_t heads, bool quick)
    : config_(std::move(config)), d_(head_dim), heads_(heads), quick_(quick) {
  config_.transport = TransportKind::kLocal;
  config_.keep_outputs = false;
  config_.check_coverage = false;
  config_.on_start = {};
  if (!config_.session) config_.session = std::make_shared<BackendSession>();
}

Result<std::vector<std::vector<OpTiming>>> EngineCalibrationTarget::Run(const CalibrationRun& run) {
  const SeededInputSource inputs(run.workload, kInputSeed);
  MESHPLAN_ASSIGN_OR_RETURN(auto result, Execute(run.schedule, run.workload, inputs, config_));
  MESHPLAN_RETURN_IF_ERROR(CheckTimed(result.timings, run.timed));
  return std::move(result.timings);
}

Status EngineCalibrationTarget::Warm(const CalibrationRun& run) {
  auto times = Run(run);
  return times.ok() ? Status::Ok() : times.status();
}

Result<double> EngineCalibrationTarget::BlockSeconds(BlockPiece piece, int64_t n, int64_t heads,
                                                     int64_t head_dim, bool backward, int ranks) {
  const InputType type = config_.run.type;
  const auto key = std::make_tuple(piece, n, heads, head_dim, backward, ranks);
  auto known = inner_.find(key);
  if (known == inner_.end()) {
    // A new shape: on a GPU one untimed run (it builds the cuDNN graphs), then one block per rank
    // timed to size the runs (on a CPU, where nothing is built, it also touches the memory first).
    MESHPLAN_ASSIGN_OR_RETURN(auto probe,
                              KernelRun(piece, n, heads, head_dim, backward, ranks, 1, type));
    if (config_.backend != Backend::kCpu) MESHPLAN_RETURN_IF_ERROR(Warm(probe));
    MESHPLAN_ASSIGN_OR_RETURN(auto probe_times, Run(probe));
    const double block_s = TimedWindowSeconds(probe_times, probe.timed);
    const double target_s = MinRankWorkSeconds(config_.backend, quick_);
    const int inner = block_s > 0 ? static_cast<int>(std::clamp(std::ceil(target_s / block_s), 1.0,
                                                                static_cast<double>(kMaxInner)))
                                  : kMaxInner;
    known = inner_.emplace(key, inner).first;
  }
  const int inner = known->second;
  last_inner_ = inner;
  MESHPLAN_ASSIGN_OR_RETURN(auto run,
                            KernelRun(piece, n, heads, head_dim, backward, ranks, inner, type));
  std::vector<double> per_block;
  for (int i = 0; i < TimedRuns(n, quick_); ++i) {
    MESHPLAN_ASSIGN_OR_RETURN(auto times, Run(run));
    per_block.push_back(TimedWindowSeconds(times, run.timed) / inner);
  }
  return Median(per_block);
}

Result<double> EngineCalibrationTarget::KernelSeconds(BlockPiece piece, int64_t n, int64_t heads,
                                                      bool backward, int ranks) {
  return BlockSeconds(piece, n, heads, d_, backward, ranks);
}

Result<double> EngineCalibrationTarget::KernelSecondsAtHeadDim(int64_t head_dim, int64_t n,
                                                               int64_t heads) {
  return BlockSeconds(BlockPiece::kFull, n, heads, head_dim, /*backward=*/false, 1);
}

int EngineCalibrationTarget::Processors() const {
  if (config_.backend != Backend::kCpu) return 0;
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

Result<double> EngineCalibrationTarget::MergeSeconds(int64_t n) {
  constexpr int kMerges = 8;  // per run; each a sample
  MESHPLAN_ASSIGN_OR_RETURN(auto run, MergeRun(n, heads_, d_, kMerges, config_.run.type));
  MESHPLAN_RETURN_IF_ERROR(Warm(run));
  std::vector<double> samples;
  for (int i = 0; i < (quick_ ? 3 : 5); ++i) {
    MESHPLAN_ASSIGN_OR_RETURN(auto times, Run(run));
    for (uint32_t op : run.timed[1]) samples.push_back(times[1][op].end_s - times[1][op].start_s);
  }
  return Median(samples);
}

Result<std::vector<double>> EngineCalibrationTarget::ConcurrentEndsSeconds(int ranks, int64_t n,
                                                                           int repeats) {
  const InputType type = config_.run.type;
  if (!warmed_ends_.count({ranks, n})) {
    MESHPLAN_ASSIGN_OR_RETURN(auto warm,
                              KernelRun(BlockPiece::kFull, n, heads_, d_, false, ranks, 1, type));
    MESHPLAN_RETURN_IF_ERROR(Warm(warm));
    warmed_ends_.insert({ranks, n});
  }
  MESHPLAN_ASSIGN_OR_RETURN(
      auto run, KernelRun(BlockPiece::kFull, n, heads_, d_, false, ranks, repeats, type));
  MESHPLAN_ASSIGN_OR_RETURN(auto times, Run(run));
  double start = std::numeric_limits<double>::infinity();
  for (size_t r = 0; r < run.timed.size(); ++r)
    start = std::min(start, times[r][run.timed[r].front()].start_s);
  std::vector<double> ends;
  for (size_t r = 0; r < run.timed.size(); ++r)
    ends.push_back(times[r][run.timed[r].back()].end_s - start);
  return ends;
}

Result<double> EngineCalibrationTarget::MessageSeconds(int64_t bytes) {
  const int messages = bytes >= (1 << 20) ? (quick_ ? 4 : 8) : (quick_ ? 16 : 32);
  MESHPLAN_ASSIGN_OR_RETURN(auto run, MessageRun(bytes, d_, messages, config_.run.type));
  MESHPLAN_RETURN_IF_ERROR(Warm(run));
  std::vector<double> one_way;
  for (int i = 0; i < 3; ++i) {
    MESHPLAN_ASSIGN_OR_RETURN(auto times, Run(run));
    for (size_t m = 0; m < run.timed[0].size(); ++m) {
      const OpTiming& send = times[0][run.timed[0][m]];
      const OpTiming& recv = times[1][run.timed[1][m]];
      one_way.push_back(recv.end_s - std::max(send.start_s, recv.start_s));
    }
  }
  return Median(one_way);
}

}  // namespace meshplan::exec
