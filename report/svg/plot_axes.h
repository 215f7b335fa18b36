// Axes of the SVG charts (report/svg/svg_plot.h): the range shown and the ticks, linear with steps
// of 1, 2 or 5 x 10^k, log2 (counts: 8, 16, ..., 1K, 1M) or log10 (decades).
#pragma once

#include <cmath>
#include <string>
#include <vector>

namespace meshplan::plot {

struct Tick {
  double value = 0;
  std::string label;
};

// The range an axis shows and its ticks.
struct Axis {
  bool log = false;  // log_base used when true
  double base = 10;
  double lo = 0, hi = 1;  // data range shown (positive when log)
  std::vector<Tick> ticks;

  // Where v lies on the axis: 0 at lo, 1 at hi.
  double Fraction(double v) const {
    if (log) return (std::log(v) - std::log(lo)) / (std::log(hi) - std::log(lo));
    return (0.5 * v - 0.5 * lo) / (0.5 * hi - 0.5 * lo);  // halves: no overflow near DBL_MAX
  }
};

// A linear axis over [lo, hi] (widened to hold 0 when `include_zero`), ending on nice ticks.
Axis LinearAxis(double lo, double hi, bool include_zero);
// Powers of two around [lo, hi] (positive), labelled as counts; at most about 12 labels.
Axis Log2Axis(double lo, double hi);
// Decades around [lo, hi] (positive); with less than two decades of data, also 2x and 5x.
Axis Log10Axis(double lo, double hi);

}  // namespace meshplan::plot
