// The rough time estimate of CPU runs (executor/calibration/run_estimate.h): FLOPs x runs over the
// measured rate of one core times the cores the ranks can use.
#include "executor/calibration/run_estimate.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

#include "core/cost/attention_flops.h"

namespace meshplan::exec {
namespace {

TEST(EstimateCpuRuns, FlopsOverTheMeasuredRateOnTheUsableCores) {
  Workload w = Workload::Default();
  w.seq_len = 4096;
  w.q_heads = 4;
  w.kv_heads = 4;
  w.head_dim = 32;
  auto one = EstimateCpuRuns(w, 1, 1);
  ASSERT_TRUE(one.ok()) << one.status().message();
  EXPECT_GT(one->flops_per_s, 1e6);  // any machine computes more than a MFLOP/s
  EXPECT_EQ(one->cores, 1);
  EXPECT_NEAR(one->seconds, WorkloadFlops(w) / (one->flops_per_s * 1), 1e-9 * one->seconds);
  // 1000 ranks use every hardware thread and no more.
  auto many = EstimateCpuRuns(w, 1000, 3);
  ASSERT_TRUE(many.ok());
  const int hardware = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  EXPECT_EQ(many->cores, hardware);
  EXPECT_NEAR(many->seconds, 3 * WorkloadFlops(w) / (many->flops_per_s * hardware),
              1e-9 * many->seconds);
}

}  // namespace
}  // namespace meshplan::exec
