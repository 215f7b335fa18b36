// The CPU calibration target: the executor's own block kernels (executor/kernels/block_kernels.h)
// and in-process transport (executor/transport/thread_transport.h), timed with a steady clock.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "executor/calibration/calibration.h"

namespace meshplan::exec {

class CpuCalibrationTarget : public CalibrationTarget {
 public:
  // Kernels of dimension `head_dim`; merges of `heads` heads; `quick` takes fewer repetitions.
  CpuCalibrationTarget(int64_t head_dim, int64_t heads, bool quick);

  // Blocks beyond kAllPiecesTokens are timed once per call (their call takes seconds); the
  // calibration's rounds give their median.
  Result<double> KernelSeconds(BlockPiece piece, int64_t n, int64_t heads, bool backward,
                               int ranks) override;
  Result<double> MergeSeconds(int64_t n) override;
  Result<std::vector<double>> ConcurrentEndsSeconds(int ranks, int64_t n, int repeats) override;
  // A message as the threads transport carries one in a run: packed into a buffer, delivered to
  // the peer's mailbox, taken and unpacked; half the median round trip.
  Result<double> MessageSeconds(int64_t bytes) override;
  // The threads transport's copies run on the cores that compute.
  bool CopiesTakeCompute() const override { return true; }
  // The hardware threads (a rank's block kernel runs on one).
  int Processors() const override;
  // The reference block, the same however quick: the median of at least kReferenceReps runs
  // and kReferenceSeconds of them, so that a 20 ms stall (seen on the development VM right after
  // a phase's threads ended: one of 8 reference times 30-40% slow in 7 runs of 2.4 ms) does not
  // read as the machine's speed.
  Result<double> ReferenceBlockSeconds() override;
  bool MeasuresOtherHeadDims() const override { return true; }
  Result<double> KernelSecondsAtHeadDim(int64_t head_dim, int64_t n, int64_t heads) override;

  // "model name" of /proc/cpuinfo and the hardware threads ("CPU" when unknown).
  static std::string DeviceModel();
  // Physical memory (sysconf), 0 when unknown.
  static double PhysicalMemoryBytes();
  // The 1-minute load average (getloadavg), -1 when unknown.
  static double LoadAverage();

 private:
  int64_t d_, heads_;
  bool quick_;
};

}  // namespace meshplan::exec
