// Where the lines of a line chart overlap, and where their direct end labels go. Geometry only, in
// pixels of the plot area (x to the right, y down from its top-left corner); no SVG.
#pragma once

#include <vector>

namespace meshplan::plot {

// Two points closer than this in both x and y are drawn on the same spot (markers are ~9 px).
inline constexpr double kSameSpotPx = 2.5;

struct PlotPoint {
  double x = 0, y = 0;
};

bool SameSpot(const PlotPoint& a, const PlotPoint& b);

// For series s and its point p: the other series (ascending) with a point on the same spot.
// `series[s]` holds the points of series s.
std::vector<std::vector<std::vector<int>>> SeriesOnSameSpot(
    const std::vector<std::vector<PlotPoint>>& series);

// One direct label for the lines that end on the same spot.
struct EndLabel {
  std::vector<int> series;  // ascending; the first one's last point is `end`
  PlotPoint end;            // where those lines end
  bool in_margin = false;   // they end at the plot's right edge: the label goes right of it
  double baseline_y = 0;    // the label's text baseline
  bool moved = false;       // a margin label pushed away from its line's end (needs a leader)
};

// Labels for every series with points (its last point being its largest x: points sorted by x).
// Labels in the right margin start at their line's end height and are pushed apart to at least
// `line_height_px` between baselines, the last at most at plot_h_px + line_height_px; the others
// sit just above their line's end. Returned by first series.
std::vector<EndLabel> PlaceEndLabels(const std::vector<std::vector<PlotPoint>>& series,
                                     double plot_w_px, double plot_h_px, double line_height_px);

}  // namespace meshplan::plot
