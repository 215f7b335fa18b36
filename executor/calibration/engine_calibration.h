// A calibration target that measures the way runs use the device: every measurement is a tiny
// Schedule (engine_schedules.h) run by the execution engine (exec::Execute, executor/execute.h)
// on the configured backend, read from the per-op times the engine records (OpTiming). On the
// CUDA backend that is cuDNN under KernelPath::kAuto where it takes a block (else the own kernels),
// P virtual ranks on one GPU sharing its SMs (a stream set per rank), device-to-device copies
// between them and the engine's merges; on the CPU backend the host streams, the same code path
// (the tests measure that).
//
// Every run has one engine for all its ranks (TransportKind::kLocal, whatever the config says):
// one clock for all ranks, so that "when the last rank ended, from the common start" can be read
// from op timings. Runs keep no outputs and produce only the blocks they time
// (ExecuteConfig::check_coverage false).
//
// What each method runs:
//   KernelSeconds:         `ranks` ranks each compute `inner` blocks of the piece back to back
//                          (inner: enough work per rank that the ranks' staggered starts, by the
//                          messages of two-shard blocks or the host issuing one rank after
//                          another, stay a small part of the window); the window from the first
//                          timed op's start to the last one's end over all ranks, per block; the
//                          median over runs. Backward: one forward block first (its LSE), then
//                          `inner` timed backward blocks. The first call of a shape warms it (cuDNN
//                          graphs, first-touch memory) and sizes `inner` from one more run.
//   MergeSeconds:          a merge op folding a partial of n rows into an accumulator (MergeRun);
//                          the median op time.
//   ConcurrentEndsSeconds: `ranks` ranks run `repeats` full forward blocks each; each rank's last
//                          op end from the earliest first-op start.
//   MessageSeconds:        one send/receive pair of the bytes between two ranks, one way: from
//                          the later of the two ops' starts to the receive's end (MessageRun); the
//                          median over a run's messages and the runs.
//   KernelSecondsAtHeadDim: a full forward block at another head dim, one rank.
// The partial piece runs as its 180-degree rotation under a window mask (engine_schedules.h says
// why): the same pairs and cut rows, on whatever kernels the engine picks for a window edge.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "executor/calibration/calibration.h"
#include "executor/calibration/engine_schedules.h"
#include "executor/execute.h"

namespace meshplan::exec {

class EngineCalibrationTarget : public CalibrationTarget {
 public:
  // Kernels of dimension `head_dim`; merges of `heads` heads; `quick` takes fewer runs. `config`
  // chooses the backend and its run options (the CUDA backend: run.type bf16 or fp16, run.path);
  // its transport, outputs and coverage check are replaced as the header says. A session is made
  // when config.session is null, so that what one run sets up (cuDNN graphs) serves the next.
  EngineCalibrationTarget(ExecuteConfig config, int64_t head_dim, int64_t heads, bool quick);

  Result<double> KernelSeconds(BlockPiece piece, int64_t n, int64_t heads, bool backward,
                               int ranks) override;
  Result<double> MergeSeconds(int64_t n) override;
  Result<std::vector<double>> ConcurrentEndsSeconds(int ranks, int64_t n, int repeats) override;
  Result<double> MessageSeconds(int64_t bytes) override;
  // The CPU backend's copies run on the cores that compute; a GPU's on its copy engines.
  bool CopiesTakeCompute() const override { return config_.backend == Backend::kCpu; }
  // The CPU backend's hardware threads (a host stream's kernel runs on one); a GPU's: 0.
  int Processors() const override;
  bool MeasuresOtherHeadDims() const override { return true; }
  Result<double> KernelSecondsAtHeadDim(int64_t head_dim, int64_t n, int64_t heads) override;

  // Blocks each rank computed per run in the last KernelSeconds call (tests, reports).
  int last_inner() const { return last_inner_; }

 private:
  // The engine's op times of one run of `run`.
  Result<std::vector<std::vector<OpTiming>>> Run(const CalibrationRun& run);
  // One untimed run (cuDNN graphs built, fresh memory touched).
  Status Warm(const CalibrationRun& run);
  Result<double> BlockSeconds(BlockPiece piece, int64_t n, int64_t heads, int64_t head_dim,
                              bool backward, int ranks);

  ExecuteConfig config_;
  int64_t d_, heads_;
  bool quick_;
  int last_inner_ = 0;
  // Blocks per rank per run, by (piece, n, heads, head dim, backward, ranks), set on a shape's
  // first call.
  std::map<std::tuple<BlockPiece, int64_t, int64_t, int64_t, bool, int>, int> inner_;
  std::set<std::pair<int, int64_t>> warmed_ends_;  // ConcurrentEndsSeconds shapes: (ranks, n)
};

// The window of a run's timed ops: from the earliest start to the latest end over every rank's
// timed ops (0 when none are timed).
double TimedWindowSeconds(const std::vector<std::vector<OpTiming>>& timings,
                          const std::vector<std::vector<uint32_t>>& timed);

}  // namespace meshplan::exec
