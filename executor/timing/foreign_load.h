// How much of the machine other processes took while something was timed (issue 48): a CPU run
// on a busy machine measures the other work as much as its own, so `execute` and `calibrate` say
// so instead of reporting an error as if it were the model's. The 1-minute load average did not
// see it (two busy processes left it at 2.5-2.8 while the runs went 13% to 224% off).
#pragma once

#include <chrono>
#include <string>
#include <string_view>

namespace meshplan::exec {

// Other processes may take at most this many cores, on average over a timed phase, before the
// phase's timings stop meaning this program's: half a core (a background job or an editor stays
// below it; one busy loop does not).
inline constexpr double kDisturbingForeignCores = 0.5;

// Measures, from its construction, the CPU time other processes use: all CPUs' busy time
// (/proc/stat, steal included) minus this process's and its reaped children's (getrusage), over
// the wall time. Cores() is that average in cores; -1 where /proc/stat cannot be read.
class ForeignCpuMeter {
 public:
  ForeignCpuMeter();
  double Cores() const;

 private:
  double machine_busy_s_;
  double own_s_;
  std::chrono::steady_clock::time_point start_;
};

// The machine's busy CPU seconds since boot (/proc/stat's first line; -1 unreadable) and this
// process's with its reaped children (getrusage).
double MachineBusySeconds();
double OwnCpuSeconds();

// "other processes used 1.4 of the 2 cores during <phase>: <consequence>; rerun on a quiet machine"
// when foreign_cores > kDisturbingForeignCores, else "" (and "" when unknown, < 0). `cores`: the
// machine's hardware threads.
std::string DisturbanceNote(double foreign_cores, int cores, std::string_view phase,
                            std::string_view consequence);

}  // namespace meshplan::exec
