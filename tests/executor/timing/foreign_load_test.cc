#include "executor/timing/foreign_load.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

namespace meshplan::exec {
namespace {

TEST(DisturbanceNote, SaysWhoTookHowMuchOnlyPastHalfACore) {
  EXPECT_EQ(DisturbanceNote(-1, 2, "the run", "x"), "");   // not measured
  EXPECT_EQ(DisturbanceNote(0.5, 2, "the run", "x"), "");  // at the limit: quiet enough
  EXPECT_EQ(DisturbanceNote(1.44, 2, "the timed runs", "the times are theirs too"),
            "other processes used 1.4 of the 2 cores during the timed runs: the times are theirs "
            "too; rerun on a quiet machine");
}

// A busy process beside an idle one: over 0.4 s of this process sleeping, the machine's busy time
// is at least the child's, and on any machine at least one core of it (nothing here competes with
// the child but other processes, which count as foreign too). Read before the child is reaped:
// reaped, its time would count as this process's own (RUSAGE_CHILDREN).
TEST(ForeignCpuMeter, CountsAnotherProcesssBusyLoop) {
  const ForeignCpuMeter meter;
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    volatile unsigned spin = 0;
    for (;;) spin = spin + 1;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  const double cores = meter.Cores();
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  if (cores < 0) GTEST_SKIP() << "/proc/stat is not readable here";
  EXPECT_GT(cores, kDisturbingForeignCores);
}

}  // namespace
}  // namespace meshplan::exec
