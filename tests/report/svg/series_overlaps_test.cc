// Overlaps of drawn lines and the placement of their end labels, on pixel positions written by
// hand (plot area 100 x 100 px, y down), so every expected value is read off the inputs.
#include "report/svg/series_overlaps.h"

#include <gtest/gtest.h>

#include <vector>

namespace meshplan::plot {
namespace {

TEST(SeriesOverlaps, SameSpotIsWithinTwoAndAHalfPixelsBothWays) {
  EXPECT_TRUE(SameSpot({10, 10}, {10, 10}));
  EXPECT_TRUE(SameSpot({10, 10}, {12.5, 7.5}));
  EXPECT_FALSE(SameSpot({10, 10}, {13, 10}));
  EXPECT_FALSE(SameSpot({10, 10}, {10, 13}));
}

TEST(SeriesOverlaps, ListsTheOtherSeriesOnEachPoint) {
  // Series 0 and 1 share both points; series 2 shares only the first (1 px off); series 3 none.
  const std::vector<std::vector<PlotPoint>> series = {
      {{0, 50}, {100, 20}}, {{0, 50}, {100, 20}}, {{1, 51}, {100, 60}}, {{50, 90}}};
  const auto same = SeriesOnSameSpot(series);
  ASSERT_EQ(same.size(), 4u);
  EXPECT_EQ(same[0][0], (std::vector<int>{1, 2}));
  EXPECT_EQ(same[0][1], (std::vector<int>{1}));
  EXPECT_EQ(same[1][0], (std::vector<int>{0, 2}));
  EXPECT_EQ(same[2][0], (std::vector<int>{0, 1}));
  EXPECT_TRUE(same[2][1].empty());
  EXPECT_TRUE(same[3][0].empty());
}

TEST(SeriesOverlaps, LinesEndingTogetherShareOneLabel) {
  const std::vector<std::vector<PlotPoint>> series = {
      {{0, 50}, {100, 20}}, {}, {{0, 50}, {100, 20}}, {{0, 40}, {100, 60}}, {{50, 90}}};
  const std::vector<EndLabel> labels = PlaceEndLabels(series, 100, 100, 15);
  ASSERT_EQ(labels.size(), 3u);
  EXPECT_EQ(labels[0].series, (std::vector<int>{0, 2}));  // series 1 has no points: no label
  EXPECT_EQ(labels[1].series, (std::vector<int>{3}));
  EXPECT_EQ(labels[2].series, (std::vector<int>{4}));
  // Lines reaching the right edge (x = 100) are labelled in the margin, centred on their end:
  // baseline = end y + 15 / 3 = 25 and 65. Series 4 ends inside: 7 px above its end, 83.
  EXPECT_TRUE(labels[0].in_margin);
  EXPECT_TRUE(labels[1].in_margin);
  EXPECT_FALSE(labels[2].in_margin);
  EXPECT_DOUBLE_EQ(labels[0].baseline_y, 25);
  EXPECT_DOUBLE_EQ(labels[1].baseline_y, 65);
  EXPECT_DOUBLE_EQ(labels[2].baseline_y, 83);
  for (const EndLabel& l : labels) EXPECT_FALSE(l.moved);
}

TEST(SeriesOverlaps, MarginLabelsArePushedApart) {
  // Ends at y = 53, 50 and 57 (at least 3 px apart: different spots) want baselines 58, 55 and
  // 62; one line (15 px) apart, from the top, they become 55 (y = 50), 70 (53), 85 (57).
  const std::vector<std::vector<PlotPoint>> series = {{{100, 53}}, {{100, 50}}, {{100, 57}}};
  std::vector<EndLabel> labels = PlaceEndLabels(series, 100, 100, 15);
  ASSERT_EQ(labels.size(), 3u);
  EXPECT_DOUBLE_EQ(labels[1].baseline_y, 55);
  EXPECT_DOUBLE_EQ(labels[0].baseline_y, 70);
  EXPECT_DOUBLE_EQ(labels[2].baseline_y, 85);
  // The first stays at its line's end; the others moved and get leaders.
  EXPECT_FALSE(labels[1].moved);
  EXPECT_TRUE(labels[0].moved);
  EXPECT_TRUE(labels[2].moved);
  // Near the bottom they are pushed back up: the last baseline stays at most at 100 + 15 = 115.
  // Ends 96, 99, 102 want 101, 104, 107 -> pushed down 101, 116, 131 -> back up from 115:
  // 115, 100, 85.
  labels = PlaceEndLabels({{{100, 96}}, {{100, 99}}, {{100, 102}}}, 100, 100, 15);
  ASSERT_EQ(labels.size(), 3u);
  EXPECT_DOUBLE_EQ(labels[0].baseline_y, 85);
  EXPECT_DOUBLE_EQ(labels[1].baseline_y, 100);
  EXPECT_DOUBLE_EQ(labels[2].baseline_y, 115);
}

}  // namespace
}  // namespace meshplan::plot
