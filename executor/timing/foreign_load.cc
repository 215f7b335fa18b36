#include "executor/timing/foreign_load.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

namespace meshplan::exec {

double MachineBusySeconds() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  if (!(in >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal) ||
      cpu != "cpu")
    return -1;
  return (user + nice + system + irq + softirq + steal) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

double OwnCpuSeconds() {
  double total = 0;
  for (int who : {RUSAGE_SELF, RUSAGE_CHILDREN}) {
    rusage usage{};
    getrusage(who, &usage);
    total += static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
             1e-6 * static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
  }
  return total;
}

ForeignCpuMeter::ForeignCpuMeter()
    : machine_busy_s_(MachineBusySeconds()),
      own_s_(OwnCpuSeconds()),
      start_(std::chrono::steady_clock::now()) {}

double ForeignCpuMeter::Cores() const {
  const double busy = MachineBusySeconds();
  if (machine_busy_s_ < 0 || busy < 0) return -1;
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (wall <= 0) return 0;
  const double foreign = (busy - machine_busy_s_) - (OwnCpuSeconds() - own_s_);
  return std::max(0.0, foreign / wall);
}

std::string DisturbanceNote(double foreign_cores, int cores, std::string_view phase,
                            std::string_view consequence) {
  if (!(foreign_cores > kDisturbingForeignCores)) return "";
  char buffer[160];
  std::snprintf(buffer, sizeof buffer, "other processes used %.1f of the %d cores during ",
                foreign_cores, cores);
  return std::string(buffer) + std::string(phase) + ": " + std::string(consequence) +
         "; rerun on a quiet machine";
}

}  // namespace meshplan::exec
