// How much of the machine other processes took while a test timed something (issue 48): the
// tests that time this machine compare their timings only when it was quiet, and otherwise say
// so and skip, since a busy machine measures the other work, not the code under test.
#pragma once

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <string>

namespace meshplan::testing {

// Other processes may take at most this many cores while a timing is compared.
inline constexpr double kQuietForeignCores = 0.5;

// The CPU time other processes used while `phase` ran, in cores: all CPUs' busy time
// (/proc/stat, steal included) minus what this process and its children used (getrusage), over
// the phase's wall time. 0 where /proc/stat cannot be read.
template <typename Phase>
double ForeignCores(Phase phase) {
  auto busy_s = [] {
    std::ifstream in("/proc/stat");
    std::string cpu;
    double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
    in >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal;
    return (user + nice + system + irq + softirq + steal) /
           static_cast<double>(sysconf(_SC_CLK_TCK));
  };
  auto own_s = [] {
    double total = 0;
    for (int who : {RUSAGE_SELF, RUSAGE_CHILDREN}) {
      rusage usage{};
      getrusage(who, &usage);
      total += static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
               1e-6 * static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
    }
    return total;
  };
  const double busy0 = busy_s(), own0 = own_s();
  const auto start = std::chrono::steady_clock::now();
  phase();
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double foreign = (busy_s() - busy0) - (own_s() - own0);
  return wall > 0 ? std::max(0.0, foreign / wall) : 0.0;
}

}  // namespace meshplan::testing
