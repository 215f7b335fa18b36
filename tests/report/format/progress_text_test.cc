// The progress bar's text (report/format/progress_text.h), derived by hand.
#include "report/format/progress_text.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>

namespace meshplan::report {
namespace {

TEST(ProgressText, ClockIsMinutesAndSecondsThenHours) {
  EXPECT_EQ(FormatClock(0), "0:00");
  EXPECT_EQ(FormatClock(59.9), "0:59");  // rounded down
  EXPECT_EQ(FormatClock(61), "1:01");
  EXPECT_EQ(FormatClock(3599), "59:59");
  EXPECT_EQ(FormatClock(3600 + 2 * 60 + 3), "1:02:03");
  EXPECT_EQ(FormatClock(-5), "0:00");
  EXPECT_EQ(FormatClock(std::numeric_limits<double>::quiet_NaN()), "0:00");
}

TEST(ProgressText, BarCountPercentTimeAndTimeLeft) {
  // 12 of 32 after 41 s: 12 x 24 / 32 = 9 cells of 24; 12 x 100 / 32 = 37.5, shown 37%; the rate
  // so far, 41 s per 12 points, leaves 20 x 41 / 12 = 68.3 s = 1:08.
  EXPECT_EQ(ProgressBarText("sweep", 12, 32, 41),
            "meshplan: sweep [#########               ] 12/32   37%  0:41, about 1:08 left");
  // The percentage is two spaces and three columns ("  %3d%%  "). Nothing done yet: an empty bar
  // and no estimate.
  EXPECT_EQ(ProgressBarText("sweep", 0, 8, 3),
            "meshplan: sweep [                        ] 0/8    0%  0:03");
  // All done: a full bar, 100%, no time left.
  EXPECT_EQ(ProgressBarText("bench", 8, 8, 75),
            "meshplan: bench [########################] 8/8  100%  1:15");
  // More done than the total is clamped; so is a negative count.
  EXPECT_EQ(ProgressBarText("x", 9, 8, 1), ProgressBarText("x", 8, 8, 1));
  EXPECT_EQ(ProgressBarText("x", -1, 8, 1), ProgressBarText("x", 0, 8, 1));
  // Steps of unequal lengths: the same bar without the time left.
  EXPECT_EQ(ProgressBarText("calibrate", 2, 7, 12, /*time_left=*/false),
            "meshplan: calibrate [######                  ] 2/7   28%  0:12");
  // No total: an empty bar at 0%, nothing divided by zero.
  EXPECT_EQ(ProgressBarText("x", 0, 0, 1),
            "meshplan: x [                        ] 0/0    0%  0:01");
}

}  // namespace
}  // namespace meshplan::report
