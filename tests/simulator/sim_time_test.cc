// Simulated time stays inside int64: EndTime clamps to the horizon instead of overflowing.
#include "simulator/sim_time.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace meshplan::sim {
namespace {

TEST(EndTimeTest, RoundsToTheNearestNanosecondInsideTheHorizon) {
  EXPECT_EQ(EndTime(1000, 2.4), 1002);
  EXPECT_EQ(EndTime(1000, 2.5), 1003);  // ties round up: 2.5 + 0.5 = 3
  EXPECT_EQ(EndTime(0, 0), 0);
}

TEST(EndTimeTest, ClampsToTheHorizonInsteadOfOverflowing) {
  // 1e30 ns would overflow int64 (9.2e18) when cast or added.
  EXPECT_EQ(EndTime(0, 1e30), kSimHorizon);
  EXPECT_EQ(EndTime(kSimHorizon - 10, 100), kSimHorizon);
  EXPECT_EQ(EndTime(kSimHorizon, 0), kSimHorizon);
  EXPECT_EQ(EndTime(5, std::numeric_limits<double>::infinity()), kSimHorizon);
  EXPECT_EQ(EndTime(5, std::nan("")), kSimHorizon);
}

}  // namespace
}  // namespace meshplan::sim
