#include "report/svg/plot_axes.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>

#include "core/base/units.h"
#include "report/svg/svg_text.h"

namespace meshplan::plot {
namespace {

// Steps of 1, 2 or 5 times a power of ten giving about `target` intervals.
double NiceStep(double range, int target) {
  const double raw = range / target;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double norm = raw / magnitude;
  const double nice = norm < 1.5 ? 1 : norm < 3.5 ? 2 : norm < 7.5 ? 5 : 10;
  return nice * magnitude;
}

std::string LinearLabel(double v, double step) {
  if (std::fabs(v) < step * 1e-6) v = 0;
  const int decimals = std::max(0, static_cast<int>(-std::floor(std::log10(step) + 1e-9)));
  char buffer[48];
  if (std::fabs(v) >= 1e6 && decimals == 0) {
    std::snprintf(buffer, sizeof buffer, "%.3g", v);
  } else {
    std::snprintf(buffer, sizeof buffer, "%.*f", std::min(decimals, 6), v);
  }
  return buffer;
}

// Powers of two as counts: 8, 16, 512, 1K, 2K, 1M; fractions as decimals.
std::string Log2Label(double v) {
  if (v >= 1 && v < 9.2e18) return FormatCount(static_cast<int64_t>(std::llround(v)));
  return Value(v);
}

std::string Log10Label(double v) {
  const int e = static_cast<int>(std::floor(std::log10(v) + 1e-9));
  char buffer[32];
  if (e >= -3 && e <= 6) {
    std::snprintf(buffer, sizeof buffer, "%.*f", std::max(0, -e), v);
    return buffer;
  }
  const double mantissa = v / std::pow(10.0, e);
  if (std::fabs(mantissa - 1) < 1e-9) {
    std::snprintf(buffer, sizeof buffer, "1e%d", e);
  } else {
    std::snprintf(buffer, sizeof buffer, "%.0fe%d", mantissa, e);
  }
  return buffer;
}

}  // namespace

Axis LinearAxis(double lo, double hi, bool include_zero) {
  Axis a;
  if (include_zero) {
    lo = std::min(lo, 0.0);
    hi = std::max(hi, 0.0);
  }
  if (!(hi > lo)) {
    const double pad = lo == 0 ? 1 : std::fabs(lo) * 0.1;
    lo -= pad;
    hi += pad;
    if (include_zero && lo < 0 && hi - pad >= 0) lo = 0;
  }
  const double step = NiceStep(hi - lo, 5);
  if (!std::isfinite(step) || step <= 0) {  // a range beyond double: just the ends
    a.lo = lo;
    a.hi = hi;
    a.ticks = {{lo, Value(lo)}, {hi, Value(hi)}};
    return a;
  }
  a.lo = std::floor(lo / step + 1e-9) * step;
  a.hi = std::ceil(hi / step - 1e-9) * step;
  for (int i = 0; i <= 100; ++i) {
    const double v = a.lo + i * step;
    if (v > a.hi + step * 1e-6) break;
    a.ticks.push_back({v, LinearLabel(v, step)});
  }
  return a;
}

Axis Log2Axis(double lo, double hi) {
  Axis a;
  a.log = true;
  a.base = 2;
  int e_lo = static_cast<int>(std::floor(std::log2(lo) + 1e-9));
  int e_hi = static_cast<int>(std::ceil(std::log2(hi) - 1e-9));
  if (e_hi == e_lo) {
    --e_lo;
    ++e_hi;
  }
  const int every = std::max(1, (e_hi - e_lo + 11) / 12);  // at most about 12 labels
  a.lo = std::pow(2.0, e_lo);
  a.hi = std::pow(2.0, e_hi);
  for (int e = e_lo; e <= e_hi; ++e) {
    if ((e - e_lo) % every != 0) continue;
    a.ticks.push_back({std::pow(2.0, e), Log2Label(std::pow(2.0, e))});
  }
  return a;
}

// Decades; with less than two decades of data, also 2x and 5x so there are enough labels.
Axis Log10Axis(double lo, double hi) {
  Axis a;
  a.log = true;
  a.base = 10;
  int e_lo = static_cast<int>(std::floor(std::log10(lo) + 1e-9));
  int e_hi = static_cast<int>(std::ceil(std::log10(hi) - 1e-9));
  if (e_hi == e_lo) ++e_hi;
  const bool minor = e_hi - e_lo <= 2;
  std::vector<double> values;
  for (int e = e_lo; e <= e_hi; ++e) {
    const double p = std::pow(10.0, e);
    values.push_back(p);
    if (minor && e < e_hi) {
      values.push_back(2 * p);
      values.push_back(5 * p);
    }
  }
  // Trim to the data (keeping one tick beyond each end) so the plot is not mostly empty.
  size_t first = 0, last = values.size() - 1;
  while (first + 1 < values.size() && values[first + 1] <= lo * (1 + 1e-9)) ++first;
  while (last > first + 1 && values[last - 1] >= hi * (1 - 1e-9)) --last;
  a.lo = values[first];
  a.hi = values[last];
  for (size_t i = first; i <= last; ++i) {
    // Decade labels say 1, 10, 100, ...; 2x and 5x labels only when few decades are shown.
    a.ticks.push_back({values[i], Log10Label(values[i])});
  }
  return a;
}

}  // namespace meshplan::plot
