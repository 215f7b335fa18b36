// SVG 1.1 rendering of the report charts. Layout is computed in pixels from estimated text widths
// (sans-serif at about 0.6 em per character), so long titles wrap, long legend entries are
// shortened with an ellipsis (the full text stays in a <title> tooltip), and the canvas grows to
// fit the legend and labels instead of clipping them.
//
// Every drawn series, legend entry, map cell and timeline bar carries data-series="NAME" (escaped),
// and a class naming what it is ("series", "legend-entry", "cell", "bar"), so tests and scripts
// can find them.
#include "report/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/units.h"

namespace meshplan::plot {
namespace {

// ---- Text ---------------------------------------------------------------------------------------

// Length of the well-formed UTF-8 sequence at text[i], or 0 when it is malformed.
size_t Utf8Length(std::string_view text, size_t i) {
  const auto byte = [&text](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char c = byte(i);
  size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  if (n == 0 || i + n > text.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  }
  return n;
}

// XML text and attribute escaping. Control characters that XML 1.0 forbids and malformed UTF-8
// become '?', so any input gives a well-formed document.
std::string Escape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 8);
  for (size_t i = 0; i < text.size();) {
    const char c = text[i];
    const size_t n = Utf8Length(text, i);
    if (n == 0) {
      out += '?';
      ++i;
      continue;
    }
    if (n > 1) {
      out.append(text.substr(i, n));
      i += n;
      continue;
    }
    ++i;
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r') {
          out += '?';
        } else {
          out += c;
        }
    }
  }
  return out;
}

bool IsContinuationByte(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// Characters (UTF-8 code points), not bytes.
size_t TextLength(std::string_view text) {
  size_t n = 0;
  for (char c : text) n += IsContinuationByte(c) ? 0 : 1;
  return n;
}

// At most `max_chars` characters; a shortened text ends in an ellipsis.
std::string Shorten(std::string_view text, size_t max_chars) {
  if (TextLength(text) <= max_chars || max_chars < 2) return std::string(text);
  size_t chars = 0, i = 0;
  for (; i < text.size(); ++i) {
    if (!IsContinuationByte(text[i])) {
      if (chars == max_chars - 1) break;
      ++chars;
    }
  }
  return std::string(text.substr(0, i)) + "\u2026";
}

// Estimated width in pixels of `text` at `font_size` (sans-serif averages about 0.6 em).
double TextWidth(std::string_view text, double font_size) {
  return static_cast<double>(TextLength(text)) * font_size * 0.6;
}

// Splits `text` at spaces into lines of at most `max_chars` characters (a longer word is shortened).
std::vector<std::string> Wrap(const std::string& text, size_t max_chars, size_t max_lines) {
  std::vector<std::string> lines;
  std::string line;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(start, end - start);
    start = end + 1;
    if (word.empty()) continue;
    if (line.empty()) {
      line = word;
    } else if (TextLength(line) + 1 + TextLength(word) <= max_chars) {
      line += " " + word;
    } else {
      lines.push_back(Shorten(line, max_chars));
      line = word;
    }
  }
  if (!line.empty() || lines.empty()) lines.push_back(Shorten(line, max_chars));
  if (lines.size() > max_lines) {
    lines.resize(max_lines);
    lines.back() = Shorten(lines.back() + " \u2026", max_chars);
  }
  return lines;
}

// Pixel coordinates with one decimal.
std::string Px(double v) {
  if (!std::isfinite(v)) v = 0;  // never "nan" in a coordinate
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f", v);
  return buffer;
}

// Data values in tooltips: up to 4 significant digits, no exponent for everyday magnitudes.
std::string Value(double v) {
  char buffer[32];
  if (v != 0 && (std::fabs(v) >= 1e7 || std::fabs(v) < 1e-3)) {
    std::snprintf(buffer, sizeof buffer, "%.3g", v);
  } else if (std::fabs(v - std::round(v)) < 1e-9 * std::max(1.0, std::fabs(v))) {
    std::snprintf(buffer, sizeof buffer, "%.0f", v);
  } else {
    std::snprintf(buffer, sizeof buffer, "%.4g", v);
  }
  return buffer;
}

// The unit inside the last parentheses of an axis label: "time (ms)" -> "ms".
std::string UnitOf(const std::string& label) {
  const size_t open = label.rfind('(');
  const size_t close = label.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return "";
  return label.substr(open + 1, close - open - 1);
}

// ---- Style --------------------------------------------------------------------------------------

// Okabe-Ito: distinguishable with the common colour-vision deficiencies. Yellow last (weak on
// white); after 8 series the colours repeat with other marker shapes and dash patterns.
constexpr const char* kPalette[] = {"#0072B2", "#E69F00", "#009E73", "#D55E00",
                                    "#CC79A7", "#56B4E9", "#000000", "#F0E442"};
constexpr int kPaletteSize = 8;
constexpr const char* kGrid = "#e5e5e5";
constexpr const char* kAxis = "#444444";
constexpr const char* kText = "#222222";
constexpr const char* kNone = "#eeeeee";

const char* Colour(int index) { return kPalette[((index % kPaletteSize) + kPaletteSize) % kPaletteSize]; }

// Black or white, whichever reads better on `hex` ("#RRGGBB").
const char* TextOn(const char* hex) {
  auto channel = [hex](int at) {
    const double v = std::stoi(std::string(hex + at, 2), nullptr, 16) / 255.0;
    return v <= 0.03928 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4);
  };
  const double luminance = 0.2126 * channel(1) + 0.7152 * channel(3) + 0.0722 * channel(5);
  return luminance > 0.22 ? "#000000" : "#ffffff";
}

constexpr double kTitleSize = 17;
constexpr double kLabelSize = 13;
constexpr double kTickSize = 11.5;
constexpr double kLegendSize = 12.5;
constexpr size_t kLegendMaxChars = 36;

class Svg {
 public:
  void Begin(double width, double height) {
    out_ += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    out_ += "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" + Px(width) +
            "\" height=\"" + Px(height) + "\" viewBox=\"0 0 " + Px(width) + " " + Px(height) +
            "\" font-family=\"Helvetica, Arial, sans-serif\" fill=\"" + kText + "\">\n";
    out_ += "<rect x=\"0\" y=\"0\" width=\"" + Px(width) + "\" height=\"" + Px(height) +
            "\" fill=\"#ffffff\"/>\n";
  }
  std::string End() {
    out_ += "</svg>\n";
    return std::move(out_);
  }
  void Raw(const std::string& text) { out_ += text; }
  // `anchor`: start, middle or end. `extra`: more attributes, already escaped.
  void Text(double x, double y, const std::string& text, double size, const char* anchor,
            const std::string& extra = "") {
    out_ += "<text x=\"" + Px(x) + "\" y=\"" + Px(y) + "\" font-size=\"" + Px(size) +
            "\" text-anchor=\"" + anchor + "\"" + (extra.empty() ? "" : " " + extra) + ">" +
            Escape(text) + "</text>\n";
  }
  void Line(double x1, double y1, double x2, double y2, const char* stroke, double width,
            const std::string& extra = "") {
    out_ += "<line x1=\"" + Px(x1) + "\" y1=\"" + Px(y1) + "\" x2=\"" + Px(x2) + "\" y2=\"" +
            Px(y2) + "\" stroke=\"" + stroke + "\" stroke-width=\"" + Px(width) + "\"" +
            (extra.empty() ? "" : " " + extra) + "/>\n";
  }
  void Rect(double x, double y, double w, double h, const char* fill, const std::string& extra = "") {
    out_ += "<rect x=\"" + Px(x) + "\" y=\"" + Px(y) + "\" width=\"" + Px(w) + "\" height=\"" +
            Px(h) + "\" fill=\"" + fill + "\"" + (extra.empty() ? "" : " " + extra) + "/>\n";
  }

 private:
  std::string out_;
};

// Title lines for a canvas `width` wide; returns the height they take.
double TitleHeight(size_t lines) { return 18 + static_cast<double>(lines) * (kTitleSize + 5); }
std::vector<std::string> TitleLines(const std::string& title, double width) {
  const size_t max_chars = static_cast<size_t>(std::max(20.0, (width - 40) / (kTitleSize * 0.6)));
  return Wrap(title, max_chars, 3);
}
void DrawTitle(Svg& svg, const std::vector<std::string>& lines, double width) {
  double y = 12 + kTitleSize;
  for (const std::string& line : lines) {
    svg.Text(width / 2, y, line, kTitleSize, "middle", "font-weight=\"bold\" class=\"title\"");
    y += kTitleSize + 5;
  }
}

// A vertical legend at (x, y): one entry per name, `swatch` draws the key in a 16x12 box.
struct LegendEntry {
  std::string name;
  std::string swatch;  // SVG fragment drawn at origin (0..16, 0..12)
  std::string kind = "legend-entry";
};
double LegendWidth(const std::vector<LegendEntry>& entries) {
  double w = 0;
  for (const LegendEntry& e : entries)
    w = std::max(w, TextWidth(Shorten(e.name, kLegendMaxChars), kLegendSize));
  return entries.empty() ? 0 : 16 + 8 + w + 16;
}
double LegendHeight(const std::vector<LegendEntry>& entries) {
  return static_cast<double>(entries.size()) * 20.0;
}
void DrawLegend(Svg& svg, const std::vector<LegendEntry>& entries, double x, double y) {
  svg.Raw("<g class=\"legend\">\n");
  for (size_t i = 0; i < entries.size(); ++i) {
    const LegendEntry& e = entries[i];
    const double top = y + static_cast<double>(i) * 20.0;
    svg.Raw("<g class=\"" + e.kind + "\" data-series=\"" + Escape(e.name) +
            "\" transform=\"translate(" + Px(x) + "," + Px(top) + ")\">\n");
    svg.Raw("<title>" + Escape(e.name) + "</title>\n");
    svg.Raw(e.swatch);
    svg.Text(24, 10.5, Shorten(e.name, kLegendMaxChars), kLegendSize, "start");
    svg.Raw("</g>\n");
  }
  svg.Raw("</g>\n");
}

// ---- Axes ---------------------------------------------------------------------------------------

struct Tick {
  double value = 0;
  std::string label;
};

struct Axis {
  bool log = false;  // log_base used when true
  double base = 10;
  double lo = 0, hi = 1;  // data range shown (positive when log)
  std::vector<Tick> ticks;

  double Fraction(double v) const {
    if (log) return (std::log(v) - std::log(lo)) / (std::log(hi) - std::log(lo));
    return (0.5 * v - 0.5 * lo) / (0.5 * hi - 0.5 * lo);  // halves: no overflow near DBL_MAX
  }
};

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

// Powers of two as counts: 8, 16, 512, 1K, 2K, 1M; fractions as decimals.
std::string Log2Label(double v) {
  if (v >= 1 && v < 9.2e18) return FormatCount(static_cast<int64_t>(std::llround(v)));
  return Value(v);
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

bool Usable(double v, bool log) { return std::isfinite(v) && (!log || v > 0); }

// ---- Line chart ---------------------------------------------------------------------------------

// Marker shapes cycle with the palette's wraps: circle, square, triangle, diamond.
std::string Marker(int index, double x, double y, const char* colour) {
  const int shape = (index / kPaletteSize + index) % 4;
  const std::string fill = "fill=\"" + std::string(colour) + "\" stroke=\"#ffffff\" stroke-width=\"1\"";
  switch (shape) {
    case 1:
      return "<rect x=\"" + Px(x - 4) + "\" y=\"" + Px(y - 4) + "\" width=\"8\" height=\"8\" " + fill + "/>";
    case 2:
      return "<path d=\"M" + Px(x) + " " + Px(y - 5) + " L" + Px(x + 5) + " " + Px(y + 4) + " L" +
             Px(x - 5) + " " + Px(y + 4) + " Z\" " + fill + "/>";
    case 3:
      return "<path d=\"M" + Px(x) + " " + Px(y - 5.5) + " L" + Px(x + 5) + " " + Px(y) + " L" +
             Px(x) + " " + Px(y + 5.5) + " L" + Px(x - 5) + " " + Px(y) + " Z\" " + fill + "/>";
    default:
      return "<circle cx=\"" + Px(x) + "\" cy=\"" + Px(y) + "\" r=\"4.5\" " + fill + "/>";
  }
}

std::string DashOf(int index) {
  switch ((index / kPaletteSize) % 3) {
    case 1: return " stroke-dasharray=\"6 3\"";
    case 2: return " stroke-dasharray=\"2 3\"";
    default: return "";
  }
}

// Draws the frame, gridlines, ticks and axis labels of a plot area.
void DrawAxes(Svg& svg, const Axis& x_axis, const Axis& y_axis, double left, double top,
              double width, double height, const std::string& x_label, const std::string& y_label,
              double y_tick_width) {
  svg.Raw("<g class=\"grid\">\n");
  for (const Tick& t : x_axis.ticks) {
    const double x = left + x_axis.Fraction(t.value) * width;
    svg.Line(x, top, x, top + height, kGrid, 1);
  }
  for (const Tick& t : y_axis.ticks) {
    const double y = top + height - y_axis.Fraction(t.value) * height;
    svg.Line(left, y, left + width, y, kGrid, 1);
  }
  svg.Raw("</g>\n<g class=\"axes\">\n");
  svg.Raw("<rect x=\"" + Px(left) + "\" y=\"" + Px(top) + "\" width=\"" + Px(width) +
          "\" height=\"" + Px(height) + "\" fill=\"none\" stroke=\"" + kAxis + "\" stroke-width=\"1\"/>\n");
  for (const Tick& t : x_axis.ticks) {
    const double x = left + x_axis.Fraction(t.value) * width;
    svg.Line(x, top + height, x, top + height + 5, kAxis, 1);
    svg.Text(x, top + height + 8 + kTickSize, t.label, kTickSize, "middle", "class=\"x-tick\"");
  }
  for (const Tick& t : y_axis.ticks) {
    const double y = top + height - y_axis.Fraction(t.value) * height;
    svg.Line(left - 5, y, left, y, kAxis, 1);
    svg.Text(left - 8, y + kTickSize * 0.35, t.label, kTickSize, "end", "class=\"y-tick\"");
  }
  svg.Text(left + width / 2, top + height + 22 + kTickSize + kLabelSize, x_label, kLabelSize,
           "middle", "class=\"x-label\"");
  const double label_x = left - 8 - y_tick_width - 10;
  const double label_y = top + height / 2;
  svg.Text(label_x, label_y, y_label, kLabelSize, "middle",
           "class=\"y-label\" transform=\"rotate(-90 " + Px(label_x) + " " + Px(label_y) + ")\"");
  svg.Raw("</g>\n");
}

double MaxTickWidth(const Axis& axis) {
  double w = 0;
  for (const Tick& t : axis.ticks) w = std::max(w, TextWidth(t.label, kTickSize));
  return w;
}

}  // namespace

std::string RenderLineChart(const LineChart& chart) {
  // Usable points per series, sorted by x.
  std::vector<std::vector<std::pair<double, double>>> points(chart.series.size());
  double x_lo = std::numeric_limits<double>::infinity(), x_hi = -x_lo;
  double y_lo = x_lo, y_hi = -x_lo;
  for (size_t s = 0; s < chart.series.size(); ++s) {
    for (const auto& [x, y] : chart.series[s].points) {
      if (!Usable(x, chart.log_x) || !Usable(y, chart.log_y)) continue;
      points[s].push_back({x, y});
      x_lo = std::min(x_lo, x);
      x_hi = std::max(x_hi, x);
      y_lo = std::min(y_lo, y);
      y_hi = std::max(y_hi, y);
    }
    std::stable_sort(points[s].begin(), points[s].end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
  }
  const bool empty = !(x_lo <= x_hi);
  if (empty) {  // axes over a default range
    x_lo = chart.log_x ? 1 : 0;
    x_hi = chart.log_x ? 1024 : 1;
    y_lo = chart.log_y ? 1 : 0;
    y_hi = chart.log_y ? 100 : 1;
  }
  if (!chart.log_x && x_lo == x_hi) {
    x_lo -= x_lo == 0 ? 1 : std::fabs(x_lo) * 0.5;
    x_hi += x_hi == 0 ? 1 : std::fabs(x_hi) * 0.5;
  }
  const Axis x_axis = chart.log_x ? Log2Axis(x_lo, x_hi) : LinearAxis(x_lo, x_hi, false);
  const Axis y_axis = chart.log_y ? Log10Axis(y_lo, y_hi) : LinearAxis(y_lo, y_hi, true);

  std::vector<LegendEntry> legend;
  for (size_t s = 0; s < chart.series.size(); ++s) {
    const int i = static_cast<int>(s);
    const char* colour = Colour(i);
    legend.push_back({chart.series[s].name,
                      "<line x1=\"0\" y1=\"6\" x2=\"16\" y2=\"6\" stroke=\"" + std::string(colour) +
                          "\" stroke-width=\"2.5\"" + DashOf(i) + "/>" + Marker(i, 8, 6, colour) + "\n"});
  }

  const double plot_w = 560, plot_h = 340;
  const double y_tick_w = MaxTickWidth(y_axis);
  const double left = 20 + kLabelSize + 10 + y_tick_w + 8;
  const double legend_w = LegendWidth(legend);
  double width = left + plot_w + 30 + legend_w + 10;
  const double x_label_w = TextWidth(chart.x_label, kLabelSize);
  width = std::max(width, left + x_label_w + 20);
  const std::vector<std::string> title = TitleLines(chart.title, width);
  const double top = TitleHeight(title.size()) + 8;
  const double height = std::max(top + plot_h + 70, top + LegendHeight(legend) + 20);

  Svg svg;
  svg.Begin(width, height);
  DrawTitle(svg, title, width);
  DrawAxes(svg, x_axis, y_axis, left, top, plot_w, plot_h, chart.x_label, chart.y_label, y_tick_w);

  const std::string unit_x = UnitOf(chart.x_label), unit_y = UnitOf(chart.y_label);
  svg.Raw("<g class=\"data\">\n");
  for (size_t s = 0; s < chart.series.size(); ++s) {
    const int i = static_cast<int>(s);
    const char* colour = Colour(i);
    const std::string name = Escape(chart.series[s].name);
    svg.Raw("<g class=\"series\" data-series=\"" + name + "\">\n");
    std::string coords;
    for (const auto& [x, y] : points[s]) {
      if (!coords.empty()) coords += ' ';
      coords += Px(left + x_axis.Fraction(x) * plot_w) + "," +
                Px(top + plot_h - y_axis.Fraction(y) * plot_h);
    }
    if (points[s].size() > 1) {
      svg.Raw("<polyline fill=\"none\" stroke=\"" + std::string(colour) +
              "\" stroke-width=\"2.2\" stroke-opacity=\"0.9\" stroke-linejoin=\"round\"" + DashOf(i) + " points=\"" +
              coords + "\"/>\n");
    }
    for (const auto& [x, y] : points[s]) {
      const double px = left + x_axis.Fraction(x) * plot_w;
      const double py = top + plot_h - y_axis.Fraction(y) * plot_h;
      svg.Raw("<g class=\"point\">" + Marker(i, px, py, colour) + "<title>" + name + ": " +
              Escape(Value(x) + (unit_x.empty() ? "" : " " + unit_x) + ", " + Value(y) +
                     (unit_y.empty() ? "" : " " + unit_y)) +
              "</title></g>\n");
    }
    svg.Raw("</g>\n");
  }
  svg.Raw("</g>\n");
  if (empty) {
    svg.Text(left + plot_w / 2, top + plot_h / 2, "no data", 16, "middle",
             "class=\"no-data\" fill=\"#888888\"");
  }
  DrawLegend(svg, legend, left + plot_w + 30, top);
  return svg.End();
}

std::string RenderCategoryMap(const CategoryMap& map) {
  const size_t rows = map.y_ticks.size();
  const size_t cols = map.x_ticks.size();
  auto cell_of = [&map](size_t r, size_t c) {
    if (r >= map.cells.size() || c >= map.cells[r].size()) return -1;
    const int k = map.cells[r][c];
    return k >= 0 && static_cast<size_t>(k) < map.categories.size() ? k : -1;
  };
  auto note_of = [&map](size_t r, size_t c) -> std::string {
    if (r >= map.notes.size() || c >= map.notes[r].size()) return "";
    return Shorten(map.notes[r][c], 12);
  };
  bool any_none = false;
  double note_w = 0;
  for (size_t r = 0; r < rows; ++r) {
    for (size_t c = 0; c < cols; ++c) {
      any_none = any_none || cell_of(r, c) < 0;
      note_w = std::max(note_w, TextWidth(note_of(r, c), 11));
    }
  }
  double x_tick_w = 0, y_tick_w = 0;
  for (const std::string& t : map.x_ticks) x_tick_w = std::max(x_tick_w, TextWidth(Shorten(t, 12), kTickSize));
  for (const std::string& t : map.y_ticks) y_tick_w = std::max(y_tick_w, TextWidth(Shorten(t, 16), kTickSize));
  const double cell_w = std::max({52.0, note_w + 10, x_tick_w + 8});
  const double cell_h = 30;

  std::vector<LegendEntry> legend;
  for (size_t k = 0; k < map.categories.size(); ++k) {
    legend.push_back({map.categories[k], "<rect x=\"0\" y=\"0\" width=\"16\" height=\"12\" fill=\"" +
                                             std::string(Colour(static_cast<int>(k))) + "\"/>\n"});
  }
  if (any_none) {
    legend.push_back({"no valid plan", "<rect x=\"0\" y=\"0\" width=\"16\" height=\"12\" fill=\"" +
                                           std::string(kNone) + "\" stroke=\"#bbbbbb\"/>\n",
                      "legend-none"});
  }
  const bool empty = rows == 0 || cols == 0;
  const double grid_w = empty ? 300 : cell_w * static_cast<double>(cols);
  const double grid_h = empty ? 150 : cell_h * static_cast<double>(rows);
  const double left = 20 + kLabelSize + 10 + y_tick_w + 8;
  const double legend_w = LegendWidth(legend);
  double width = left + grid_w + 30 + legend_w + 10;
  width = std::max(width, left + TextWidth(map.x_label, kLabelSize) + 20);
  const std::vector<std::string> title = TitleLines(map.title, width);
  const double top = TitleHeight(title.size()) + 8;
  const double height = std::max(top + grid_h + 70, top + LegendHeight(legend) + 20);

  Svg svg;
  svg.Begin(width, height);
  DrawTitle(svg, title, width);
  // Row 0 at the bottom, as on a chart's y axis (small sequence lengths low).
  svg.Raw("<g class=\"cells\">\n");
  for (size_t r = 0; r < rows; ++r) {
    const double y = top + grid_h - static_cast<double>(r + 1) * cell_h;
    for (size_t c = 0; c < cols; ++c) {
      const double x = left + static_cast<double>(c) * cell_w;
      const int k = cell_of(r, c);
      const std::string name = k >= 0 ? map.categories[static_cast<size_t>(k)] : "none";
      const char* fill = k >= 0 ? Colour(k) : kNone;
      const std::string note = note_of(r, c);
      std::string tip = map.y_label + " " + map.y_ticks[r] + ", " + map.x_label + " " + map.x_ticks[c] +
                        ": " + (k >= 0 ? name : "no valid plan");
      if (r < map.notes.size() && c < map.notes[r].size() && !map.notes[r][c].empty())
        tip += " (" + map.notes[r][c] + ")";
      svg.Raw("<g class=\"" + std::string(k >= 0 ? "cell" : "cell-none") + "\" data-series=\"" +
              Escape(name) + "\">\n<title>" + Escape(tip) + "</title>\n");
      svg.Rect(x + 1, y + 1, cell_w - 2, cell_h - 2, fill);
      if (!note.empty()) {
        svg.Text(x + cell_w / 2, y + cell_h / 2 + 4, note, 11, "middle",
                 std::string("fill=\"") + (k >= 0 ? TextOn(fill) : "#666666") + "\"");
      }
      svg.Raw("</g>\n");
    }
  }
  svg.Raw("</g>\n<g class=\"axes\">\n");
  svg.Raw("<rect x=\"" + Px(left) + "\" y=\"" + Px(top) + "\" width=\"" + Px(grid_w) +
          "\" height=\"" + Px(grid_h) + "\" fill=\"none\" stroke=\"" + kAxis + "\" stroke-width=\"1\"/>\n");
  for (size_t c = 0; c < cols; ++c) {
    const double x = left + (static_cast<double>(c) + 0.5) * cell_w;
    svg.Text(x, top + grid_h + 8 + kTickSize, Shorten(map.x_ticks[c], 12), kTickSize, "middle",
             "class=\"x-tick\"");
  }
  for (size_t r = 0; r < rows; ++r) {
    const double y = top + grid_h - (static_cast<double>(r) + 0.5) * cell_h;
    svg.Text(left - 8, y + kTickSize * 0.35, Shorten(map.y_ticks[r], 16), kTickSize, "end",
             "class=\"y-tick\"");
  }
  svg.Text(left + grid_w / 2, top + grid_h + 22 + kTickSize + kLabelSize, map.x_label, kLabelSize,
           "middle", "class=\"x-label\"");
  const double label_x = left - 8 - y_tick_w - 10;
  const double label_y = top + grid_h / 2;
  svg.Text(label_x, label_y, map.y_label, kLabelSize, "middle",
           "class=\"y-label\" transform=\"rotate(-90 " + Px(label_x) + " " + Px(label_y) + ")\"");
  svg.Raw("</g>\n");
  if (empty) {
    svg.Text(left + grid_w / 2, top + grid_h / 2, "no data", 16, "middle",
             "class=\"no-data\" fill=\"#888888\"");
  }
  DrawLegend(svg, legend, left + grid_w + 30, top);
  return svg.End();
}

std::string RenderTimeline(const Timeline& timeline) {
  const size_t lanes = timeline.lanes.size();
  const int num_categories = static_cast<int>(timeline.categories.size());
  // Category index for drawing; unknown categories share one extra slot ("other").
  auto slot = [num_categories](int category) {
    return category >= 0 && category < num_categories ? category : num_categories;
  };
  std::vector<size_t> order;  // drawable bars, by lane then start
  double t_lo = 0, t_hi = 0;
  bool any = false;
  for (size_t i = 0; i < timeline.bars.size(); ++i) {
    const Timeline::Bar& b = timeline.bars[i];
    if (b.lane < 0 || static_cast<size_t>(b.lane) >= lanes) continue;
    if (!std::isfinite(b.start) || !std::isfinite(b.end) || b.end < b.start) continue;
    order.push_back(i);
    t_lo = std::min(t_lo, b.start);
    t_hi = any ? std::max(t_hi, b.end) : b.end;
    any = true;
  }
  std::stable_sort(order.begin(), order.end(), [&timeline](size_t a, size_t b) {
    const Timeline::Bar& x = timeline.bars[a];
    const Timeline::Bar& y = timeline.bars[b];
    return x.lane != y.lane ? x.lane < y.lane : x.start < y.start;
  });
  // Categories that overlap in time on some lane (compute beside a send) get separate bands of
  // every lane; categories that never overlap (forward and backward compute) share one. Bands go
  // to categories in order, so the first categories take the top band. Overlapping bars of one
  // category are drawn translucent, so their overlap shows darker.
  const size_t slots = static_cast<size_t>(num_categories) + 1;
  std::vector<std::vector<bool>> conflict(slots, std::vector<bool>(slots, false));
  std::vector<bool> used(slots, false);
  {
    std::vector<size_t> active;
    int lane = -1;
    for (size_t i : order) {
      const Timeline::Bar& b = timeline.bars[i];
      if (b.lane != lane) {
        active.clear();
        lane = b.lane;
      }
      const size_t c = static_cast<size_t>(slot(b.category));
      used[c] = true;
      size_t kept = 0;
      for (size_t j : active) {
        const Timeline::Bar& o = timeline.bars[j];
        if (o.end <= b.start) continue;
        active[kept++] = j;
        if (b.start < o.end && o.start < b.end) {
          const size_t d = static_cast<size_t>(slot(o.category));
          conflict[c][d] = conflict[d][c] = true;
        }
      }
      active.resize(kept);
      active.push_back(i);
    }
  }
  std::vector<int> band(slots, 0);
  std::vector<std::vector<size_t>> band_members;
  for (size_t c = 0; c < slots; ++c) {
    if (!used[c]) continue;
    size_t chosen = band_members.size();
    for (size_t k = 0; k < band_members.size() && chosen == band_members.size(); ++k) {
      bool free = true;
      for (size_t d : band_members[k]) free = free && !conflict[c][d];
      if (free) chosen = k;
    }
    if (chosen == band_members.size()) band_members.emplace_back();
    band_members[chosen].push_back(c);
    band[c] = static_cast<int>(chosen);
  }
  const int bands = std::max<int>(1, static_cast<int>(band_members.size()));

  if (!any) t_hi = 1;
  // The axis ends at the last bar: ticks inside the range only.
  Axis axis = LinearAxis(t_lo, t_hi, true);
  if (any && t_hi > t_lo) {
    axis.lo = t_lo;
    axis.hi = t_hi;
    std::vector<Tick> inside;
    for (const Tick& t : axis.ticks) {
      if (t.value >= t_lo - 1e-9 * (t_hi - t_lo) && t.value <= t_hi + 1e-9 * (t_hi - t_lo))
        inside.push_back(t);
    }
    axis.ticks = std::move(inside);
  }

  double lane_label_w = 0;
  for (const std::string& l : timeline.lanes) lane_label_w = std::max(lane_label_w, TextWidth(Shorten(l, 24), kTickSize));
  const double lane_h = lanes > 48 ? 14 : lanes > 16 ? 20 : 30;
  const double plot_w = 720;
  const double plot_h = std::max(60.0, lane_h * static_cast<double>(lanes));
  std::vector<LegendEntry> legend;
  for (size_t k = 0; k < timeline.categories.size(); ++k) {
    legend.push_back({timeline.categories[k], "<rect x=\"0\" y=\"0\" width=\"16\" height=\"12\" fill=\"" +
                                                  std::string(Colour(static_cast<int>(k))) + "\"/>\n"});
  }
  const double left = 20 + lane_label_w + 10;
  const double legend_w = LegendWidth(legend);
  double width = left + plot_w + 30 + legend_w + 10;
  width = std::max(width, left + TextWidth(timeline.time_label, kLabelSize) + 20);
  const std::vector<std::string> title = TitleLines(timeline.title, width);
  const double top = TitleHeight(title.size()) + 8;
  const double height = std::max(top + plot_h + 60, top + LegendHeight(legend) + 20);

  Svg svg;
  svg.Begin(width, height);
  DrawTitle(svg, title, width);
  svg.Raw("<g class=\"lanes\">\n");
  for (size_t l = 0; l < lanes; ++l) {
    const double y = top + static_cast<double>(l) * lane_h;
    if (l % 2 == 1) svg.Rect(left, y, plot_w, lane_h, "#f7f7f7");
    svg.Text(left - 8, y + lane_h / 2 + kTickSize * 0.35, Shorten(timeline.lanes[l], 24), kTickSize,
             "end", "class=\"lane-label\"");
  }
  svg.Raw("</g>\n<g class=\"grid\">\n");
  for (const Tick& t : axis.ticks) {
    const double x = left + axis.Fraction(t.value) * plot_w;
    svg.Line(x, top, x, top + plot_h, kGrid, 1);
  }
  svg.Raw("</g>\n<g class=\"bars\">\n");
  const std::string unit = UnitOf(timeline.time_label);
  for (size_t i : order) {
    const Timeline::Bar& b = timeline.bars[i];
    const size_t lane = static_cast<size_t>(b.lane);
    const int c = slot(b.category);
    const double band_h = (lane_h - 4) / bands;
    const double x = left + axis.Fraction(b.start) * plot_w;
    const double w = std::max(0.6, axis.Fraction(b.end) * plot_w - axis.Fraction(b.start) * plot_w);
    const double y = top + static_cast<double>(lane) * lane_h + 2 + band_h * band[static_cast<size_t>(c)];
    const bool known = c < num_categories;
    const std::string name = known ? timeline.categories[static_cast<size_t>(c)] : "other";
    const char* fill = known ? Colour(c) : "#999999";
    const bool overlapping = conflict[static_cast<size_t>(c)][static_cast<size_t>(c)];
    svg.Raw("<rect class=\"bar\" data-series=\"" + Escape(name) + "\" x=\"" + Px(x) + "\" y=\"" +
            Px(y) + "\" width=\"" + Px(w) + "\" height=\"" + Px(std::max(1.0, band_h - 1)) +
            "\" fill=\"" + fill + "\"" + (overlapping ? " fill-opacity=\"0.6\"" : "") + "><title>" +
            Escape(timeline.lanes[lane] + ": " + name + ", " + Value(b.start) + " to " + Value(b.end) +
                   (unit.empty() ? "" : " " + unit)) +
            "</title></rect>\n");
  }
  svg.Raw("</g>\n<g class=\"axes\">\n");
  svg.Raw("<rect x=\"" + Px(left) + "\" y=\"" + Px(top) + "\" width=\"" + Px(plot_w) +
          "\" height=\"" + Px(plot_h) + "\" fill=\"none\" stroke=\"" + kAxis + "\" stroke-width=\"1\"/>\n");
  for (const Tick& t : axis.ticks) {
    const double x = left + axis.Fraction(t.value) * plot_w;
    svg.Line(x, top + plot_h, x, top + plot_h + 5, kAxis, 1);
    svg.Text(x, top + plot_h + 8 + kTickSize, t.label, kTickSize, "middle", "class=\"x-tick\"");
  }
  svg.Text(left + plot_w / 2, top + plot_h + 22 + kTickSize + kLabelSize, timeline.time_label,
           kLabelSize, "middle", "class=\"x-label\"");
  svg.Raw("</g>\n");
  if (!any) {
    svg.Text(left + plot_w / 2, top + plot_h / 2 + 5, "no data", 16, "middle",
             "class=\"no-data\" fill=\"#888888\"");
  }
  DrawLegend(svg, legend, left + plot_w + 30, top);
  return svg.End();
}

}  // namespace meshplan::plot
