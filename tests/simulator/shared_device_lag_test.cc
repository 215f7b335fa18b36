// The last rank's lag on an oversubscribed shared device (GpuSpec::sharing_end_lag_s, issue 30):
// when the condition holds, the planner's estimate and the simulator's replay of the same plan
// both grow by exactly the lag, once per run; otherwise neither moves.
#include <gtest/gtest.h>

#include "core/kernel_time.h"
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
  EXPECT_DOUBLE_EQ(SharedDeviceEndLagSeconds(gpu), 16e-3);  // 6 ranks time-sliced on 2
  gpu.concurrent_kernels = 6;
  EXPECT_DOUBLE_EQ(SharedDeviceEndLagSeconds(gpu), 0.0);  // every rank runs at full rate
  gpu.concurrent_kernels = 2;
  gpu.sharing = DeviceSharing::kSerial;
  EXPECT_DOUBLE_EQ(SharedDeviceEndLagSeconds(gpu), 0.0);  // staggered ends are modelled op by op
  gpu.sharing = DeviceSharing::kProcessor;
  gpu.ranks_per_device = 1;
  EXPECT_DOUBLE_EQ(SharedDeviceEndLagSeconds(gpu), 0.0);  // a device per rank
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
}

}  // namespace
}  // namespace meshplan::sim
