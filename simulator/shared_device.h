// Kernels of the ranks that share one device (GpuSpec::ranks_per_device > 1): the device runs
// `concurrent` kernels at their full rate and divides itself among more as GpuSpec::sharing says.
//
//   processor: m running kernels each progress at min(1, concurrent / m) of their full rate
//              (time-slicing threads on CPU cores; concurrent kernels splitting a GPU's SMs);
//   serial:    in start order, kernel i (from 0) runs at clamp(concurrent - i, 0, 1) of its rate:
//              the first `concurrent` at full rate, later ones wait without progressing.
//
// Copies in flight between ranks of the device (GpuSpec::copies_take_compute) count as runners too:
// processor sharing gives each kernel min(1, concurrent / (kernels + copies)); serial sharing
// gives the copies the first slots. The copies' own speed is the flow network's (the device's copy
// link), not slowed by the kernels.
//
// A kernel's work is its duration alone on the device (UnsharedKernelSeconds), in nanoseconds.
// Every change to the set of running kernels advances their progress to `now` and gives all of them
// new finish times, stamped with a new epoch: a finish event is valid only with the current epoch.
#pragma once

#include <cstdint>
#include <vector>

#include "core/cluster/topology.h"
#include "simulator/sim_time.h"

namespace meshplan::sim {

class SharedDevice {
 public:
  SharedDevice(double concurrent, DeviceSharing sharing)
      : concurrent_(concurrent), sharing_(sharing) {}

  // A kernel of (rank, op) starts at `now` with `work_ns` of work at full rate.
  void Start(SimTime now, int32_t rank, int32_t op, double work_ns);
  // The kernel of (rank, op) ends at `now` (its finish event of the current epoch fired).
  // REQUIRES: it is running.
  void Finish(SimTime now, int32_t rank, int32_t op);

  // A copy inside the device starts or ends at `now`. REQUIRES for EndCopy: one is in flight.
  // Callers reschedule after either (the kernels' share changed).
  void StartCopy(SimTime now);
  void EndCopy(SimTime now);

  // Calls f(rank, op, finish_time) for every kernel that progresses under the current share, and
  // opens a new epoch (the finish times are valid with epoch() until the next change).
  template <class F>
  void Reschedule(SimTime now, F&& f) {
    ++epoch_;
    for (size_t i = 0; i < kernels_.size(); ++i) {
      const double rate = RateOf(i);
      if (rate <= 0) continue;
      f(kernels_[i].rank, kernels_[i].op, EndTime(now, kernels_[i].remaining_ns / rate));
    }
  }
  uint32_t epoch() const { return epoch_; }
  size_t running() const { return kernels_.size(); }

 private:
  struct Kernel {
    int32_t rank = 0, op = 0;
    double remaining_ns = 0;
  };
  // Fraction of its full rate kernel i (in start order) gets now.
  double RateOf(size_t i) const;
  // Progress of every kernel from updated_ to now.
  void Advance(SimTime now);

  double concurrent_;
  DeviceSharing sharing_;
  std::vector<Kernel> kernels_;  // in start order
  int copies_ = 0;               // copies in flight
  SimTime updated_ = 0;
  uint32_t epoch_ = 0;
};

}  // namespace meshplan::sim
