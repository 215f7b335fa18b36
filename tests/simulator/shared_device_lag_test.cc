// The last rank's lag on an oversubscribed shared device (GpuSpec::sharing_end_lag_s, issue 30):
// when the condition holds, the planner's estimate and the simulator's replay of the same plan
// both grow by exactly the lag, once per run; otherwise neither moves.
#include <gtest/gtest.h>

#include "core/cost/kernel_time.h"
#include "planner/evaluate_plan.h"
#include "planner/strategy.h"
#include "simulator/simulation_timer.h"
#include "tests/planner/test_cluster.h"

namespace meshplan::sim {
namespace {

TEST(SharedDeviceLag, ChargedOnlyWhenTimeSlicedRanksOutnumberTheDevicesKernels) {
  GpuSpec gpu;
  gpu.sharing_end_lag_s = 16e-3;
  gpu.ranks_per_device = 6;
  gpu.concurrent_kernels = 2;
  gpu.sharing = DeviceSharing::kProcessor;
  const double run_s = 0.2;  // any run: with no fraction the lag is the time alone
  EXPECT_DOUBLE_EQ(SharedDeviceEndLagSeconds(gpu, run_s), 16e-3);  // 6 ranks time-sliced on 2
  gpu.concurrent_kernels = 6;
  EXPECT_DOUBLE_EQ(SharedDeviceEndLagSeconds(gpu, run_s), 0.0);  // every rank runs at full rate
  gpu.concurrent_kernels = 2;
  gpu.sharing = DeviceSharing::kSerial;
  // staggered ends are modelled op by op
  EXPECT_DOUBLE_EQ(SharedDeviceEndLagSeconds(gpu, run_s), 0.0);
  gpu.sharing = DeviceSharing::kProcessor;
  gpu.ranks_per_device = 1;
  EXPECT_DOUBLE_EQ(SharedDeviceEndLagSeconds(gpu, run_s), 0.0);  // a device per rank
}

TEST(SharedDeviceLag, AFractionOfTheRunBesideTheTime) {
  // 3 ranks time-sliced on 2 cores, lag 6 ms + 0.1 of the run (docs/fidelity.md's measurement):
  // a 75 ms run ends 6 + 7.5 = 13.5 ms late, a 323 ms one 6 + 32.3 = 38.3 ms.
  GpuSpec gpu;
  gpu.ranks_per_device = 3;
  gpu.concurrent_kernels = 2;
  gpu.sharing = DeviceSharing::kProcessor;
  gpu.sharing_end_lag_s = 6e-3;
  gpu.sharing_end_lag_fraction = 0.1;
  EXPECT_NEAR(SharedDeviceEndLagSeconds(gpu, 75e-3), 13.5e-3, 1e-15);
  EXPECT_NEAR(SharedDeviceEndLagSeconds(gpu, 323e-3), 38.3e-3, 1e-15);
  gpu.concurrent_kernels = 3;  // not oversubscribed: nothing, whatever the fraction
  EXPECT_DOUBLE_EQ(SharedDeviceEndLagSeconds(gpu, 323e-3), 0.0);
}

// A zigzag ring of 4 on SmallCluster(4, 1), its 4 ranks made to share one device that runs 2
// kernels at once: with a lag of 16 ms the estimate and the replay each end 16 ms later than
// with none (the run's one lag, whatever its steps), and with 4 kernels at once neither moves.
TEST(SharedDeviceLag, EstimateAndReplayGrowByTheLagOnce) {
  Topology t = meshplan::testing::SmallCluster(4, 1);
  t.gpu.ranks_per_device = 4;
  t.gpu.concurrent_kernels = 2;
  t.gpu.sharing = DeviceSharing::kProcessor;
  const Workload w = meshplan::testing::ComputeBoundWorkload(Pass::kForward);
  const SchemeParams ring = meshplan::testing::ZigzagRing(4);
  auto timed = [&](const Topology& topology) {
    const planner::PlanContext ctx(w, topology);
    const planner::Estimate e =
        planner::EvaluatePlan(ctx, *planner::MakeStrategy(ring.scheme), ring);
    EXPECT_TRUE(e.valid);
    auto simulated = SimulatedSeconds(ctx, ring);
    EXPECT_TRUE(simulated.ok());
    return std::pair<double, double>{e.time_s, simulated.ok() ? *simulated : -1.0};
  };
  const auto [estimate0, replay0] = timed(t);
  t.gpu.sharing_end_lag_s = 16e-3;
  const auto [estimate1, replay1] = timed(t);
  EXPECT_NEAR(estimate1 - estimate0, 16e-3, 1e-9);
  EXPECT_NEAR(replay1 - replay0, 16e-3, 1e-9);
  t.gpu.concurrent_kernels = 4;
  t.gpu.sharing_end_lag_s = 0;
  const auto [estimate2, replay2] = timed(t);
  t.gpu.sharing_end_lag_s = 16e-3;
  const auto [estimate3, replay3] = timed(t);
  EXPECT_DOUBLE_EQ(estimate3, estimate2);
  EXPECT_DOUBLE_EQ(replay3, replay2);
  // A fraction of the run beside the time: each grows by 16 ms + 0.25 x its own lag-free time
  // (estimate0, replay0: the same device, no lag).
  t.gpu.concurrent_kernels = 2;
  t.gpu.sharing_end_lag_fraction = 0.25;
  const auto [estimate4, replay4] = timed(t);
  EXPECT_NEAR(estimate4 - estimate0, 16e-3 + 0.25 * estimate0, 1e-9);
  EXPECT_NEAR(replay4 - replay0, 16e-3 + 0.25 * replay0, 1e-9);
}

}  // namespace
}  // namespace meshplan::sim
