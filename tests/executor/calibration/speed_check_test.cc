// The machine's speed check (executor/calibration/speed_check.h): its arithmetic by hand, and
// the check a calibration record gives.
#include "executor/calibration/speed_check.h"

#include <gtest/gtest.h>

namespace meshplan::exec {
namespace {

TEST(SpeedCheck, RatioIsTheMeanOfBeforeAndAfterOverTheCalibration) {
  SpeedCheck s;
  s.calibration_s = 2e-3;
  s.before_s = 2.2e-3;
  s.after_s = 2.6e-3;
  // (2.2 + 2.6) / 2 / 2.0 = 1.2; between the two, (2.6 - 2.2) / 2.2 = 0.1818...
  EXPECT_TRUE(s.measured());
  EXPECT_DOUBLE_EQ(s.Ratio(), 1.2);
  EXPECT_NEAR(s.RunSpread(), 0.4 / 2.2, 1e-12);
  // Faster than calibrated: 1.5 and 1.5 ms over 2 ms = 0.75.
  s.before_s = s.after_s = 1.5e-3;
  EXPECT_DOUBLE_EQ(s.Ratio(), 0.75);
  EXPECT_DOUBLE_EQ(s.RunSpread(), 0.0);
}

TEST(SpeedCheck, NotMeasuredIsRatioOne) {
  SpeedCheck s;
  EXPECT_FALSE(s.measured());
  EXPECT_EQ(s.Ratio(), 1.0);
  s.calibration_s = 1e-3;
  s.before_s = 1e-3;  // after the runs it failed
  EXPECT_FALSE(s.measured());
  EXPECT_EQ(s.Ratio(), 1.0);
  EXPECT_EQ(s.RunSpread(), 0.0);
}

TEST(SpeedCheck, FromACalibrationRecord) {
  CalibrationRecord record;
  EXPECT_EQ(SpeedCheckFor(record).calibration_s, 0.0);  // no reference: nothing to check
  record.reference_block_s = 4.4e-3;
  record.reference_head_dim = 64;
  record.speed_spread = 0.062;
  const SpeedCheck s = SpeedCheckFor(record);
  EXPECT_EQ(s.calibration_s, 4.4e-3);
  EXPECT_EQ(s.head_dim, 64);
  EXPECT_EQ(s.calibration_spread, 0.062);
  EXPECT_FALSE(s.measured());
}

}  // namespace
}  // namespace meshplan::exec
