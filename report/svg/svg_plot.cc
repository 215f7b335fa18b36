// SVG 1.1 rendering of the report charts. Layout is computed in pixels from estimated text widths
// (sans-serif at about 0.6 em per character), so long titles wrap, long legend entries are
// shortened with an ellipsis (the full text stays in a <title> tooltip), and the canvas grows to
// fit the legend and labels instead of clipping them.
//
// Every drawn series, legend entry, map cell and timeline bar carries data-series="NAME" (escaped),
// and a class naming what it is ("series", "legend-entry", "cell", "bar"), so tests and scripts
// can find them. Shared parts: report/svg/svg_text.h (escaping, text sizes), report/svg/plot_axes.h
// (axes and ticks), report/svg/svg_canvas.h (palette, title, legend, axes frame),
// report/svg/series_overlaps.h (where lines overlap and where their end labels go).
#include "report/svg/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "report/svg/plot_axes.h"
#include "report/svg/series_overlaps.h"
#include "report/svg/svg_canvas.h"
#include "report/svg/svg_text.h"

namespace meshplan::plot {
namespace {

bool Usable(double v, bool log) { return std::isfinite(v) && (!log || v > 0); }

// ---- Line chart ---------------------------------------------------------------------------------

// A closed polygon through `points` (offsets from (x, y), in units of `scale`).
std::string Polygon(double x, double y, double scale,
                    std::initializer_list<std::pair<double, double>> points,
                    const std::string& style) {
  std::string d;
  for (const auto& [dx, dy] : points)
    d += (d.empty() ? "M" : " L") + Px(x + dx * scale) + " " + Px(y + dy * scale);
  return "<path d=\"" + d + " Z\" " + style + "/>";
}

// One marker shape per series (circle, square, triangle up, diamond, triangle down, cross, plus,
// hexagon), shifted by one after each wrap of the palette so colour and shape pairs stay unique.
// `scale` enlarges it (a marker under others at the same spot).
std::string Marker(int index, double x, double y, const char* colour, double scale = 1.0) {
  const int shape = (index / kPaletteSize + index) % 8;
  const std::string style =
      "fill=\"" + std::string(colour) + "\" stroke=\"#ffffff\" stroke-width=\"1\"";
  switch (shape) {
    case 1:
      return "<rect x=\"" + Px(x - 4 * scale) + "\" y=\"" + Px(y - 4 * scale) + "\" width=\"" +
             Px(8 * scale) + "\" height=\"" + Px(8 * scale) + "\" " + style + "/>";
    case 2:
      return Polygon(x, y, scale, {{0, -5}, {5, 4}, {-5, 4}}, style);
    case 3:
      return Polygon(x, y, scale, {{0, -5.5}, {5, 0}, {0, 5.5}, {-5, 0}}, style);
    case 4:
      return Polygon(x, y, scale, {{0, 5}, {5, -4}, {-5, -4}}, style);
    case 5:
      return Polygon(x, y, scale,
                     {{-4.5, -3},
                      {-3, -4.5},
                      {0, -1.5},
                      {3, -4.5},
                      {4.5, -3},
                      {1.5, 0},
                      {4.5, 3},
                      {3, 4.5},
                      {0, 1.5},
                      {-3, 4.5},
                      {-4.5, 3},
                      {-1.5, 0}},
                     style);
    case 6:
      return Polygon(x, y, scale,
                     {{-1.8, -5},
                      {1.8, -5},
                      {1.8, -1.8},
                      {5, -1.8},
                      {5, 1.8},
                      {1.8, 1.8},
                      {1.8, 5},
                      {-1.8, 5},
                      {-1.8, 1.8},
                      {-5, 1.8},
                      {-5, -1.8},
                      {-1.8, -1.8}},
                     style);
    case 7:
      return Polygon(x, y, scale,
                     {{0, -5}, {4.3, -2.5}, {4.3, 2.5}, {0, 5}, {-4.3, 2.5}, {-4.3, -2.5}}, style);
    default:
      return "<circle cx=\"" + Px(x) + "\" cy=\"" + Px(y) + "\" r=\"" + Px(4.5 * scale) + "\" " +
             style + "/>";
  }
}

// A dash pattern per series: five patterns (solid first) against eight colours, so no two of the
// first 40 series look alike, and a dashed line drawn over another leaves gaps that show it.
std::string DashOf(int index) {
  switch (index % 5) {
    case 1:
      return " stroke-dasharray=\"8 4\"";
    case 2:
      return " stroke-dasharray=\"2 3\"";
    case 3:
      return " stroke-dasharray=\"10 3 2 3\"";
    case 4:
      return " stroke-dasharray=\"4 4\"";
    default:
      return "";
  }
}

// Text in a series' colour, darkened where the colour is too light to read on white (yellow).
std::string TextColour(int index) {
  const char* hex = Colour(index);
  auto channel = [hex](int at) { return std::stoi(std::string(hex + at, 2), nullptr, 16); };
  const double r = channel(1), g = channel(3), b = channel(5);
  if (0.2126 * r + 0.7152 * g + 0.0722 * b < 180) return hex;
  char buffer[8];
  std::snprintf(buffer, sizeof buffer, "#%02X%02X%02X", static_cast<int>(r * 0.6),
                static_cast<int>(g * 0.6), static_cast<int>(b * 0.6));
  return buffer;
}

// ---- End labels ---------------------------------------------------------------------------------

constexpr double kEndLabelSize = 11.5;
constexpr size_t kEndLabelMaxChars = 28;  // per series name

std::string EndLabelText(const LineChart& chart, const EndLabel& label) {
  std::string text;
  for (int s : label.series) {
    text += (text.empty() ? "" : ", ") +
            Shorten(chart.series[static_cast<size_t>(s)].name, kEndLabelMaxChars);
  }
  return text;
}

// The names of the lines that end on one spot, each in its line's colour: in the right margin for
// lines that reach the plot's right edge (with a leader when the label had to move), else just
// above the end.
void DrawEndLabels(Svg& svg, const LineChart& chart, const std::vector<EndLabel>& labels,
                   double left, double top, double plot_w) {
  svg.Raw("<g class=\"end-labels\">\n");
  for (const EndLabel& l : labels) {
    const double width = TextWidth(EndLabelText(chart, l), kEndLabelSize);
    double x = l.in_margin ? left + plot_w + 10 : left + l.end.x + 6;
    const char* anchor = "start";
    if (!l.in_margin &&
        l.end.x + 6 + width > plot_w) {  // would cross the right edge: end at the point
      x = left + l.end.x - 6;
      anchor = "end";
    }
    const double y = top + l.baseline_y;
    if (l.moved) {
      svg.Line(left + plot_w + 1, top + l.end.y, x - 2, y - kEndLabelSize * 0.35, kAxis, 0.6);
    }
    std::string names, spans;
    for (int s : l.series) {
      const std::string name =
          Shorten(chart.series[static_cast<size_t>(s)].name, kEndLabelMaxChars);
      names += (names.empty() ? "" : ", ") + chart.series[static_cast<size_t>(s)].name;
      spans += std::string(
                   spans.empty() ? "" : "<tspan fill=\"" + std::string(kText) + "\">, </tspan>") +
               "<tspan fill=\"" + TextColour(s) + "\">" + Escape(name) + "</tspan>";
    }
    // A white halo (painted under the text) keeps the label readable over lines and markers.
    svg.Raw(
        "<text class=\"end-label\" data-series=\"" + Escape(names) + "\" x=\"" + Px(x) + "\" y=\"" +
        Px(y) + "\" font-size=\"" + Px(kEndLabelSize) + "\" text-anchor=\"" + anchor +
        "\" xml:space=\"preserve\" stroke=\"#ffffff\" stroke-width=\"3\" stroke-linejoin=\"round\" "
        "paint-order=\"stroke\">" +
        spans + "</text>\n");
  }
  svg.Raw("</g>\n");
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
    legend.push_back({chart.series[s].name, "<line x1=\"0\" y1=\"6\" x2=\"16\" y2=\"6\" stroke=\"" +
                                                std::string(colour) + "\" stroke-width=\"2.5\"" +
                                                DashOf(i) + "/>" + Marker(i, 8, 6, colour) + "\n"});
  }

  const double plot_w = 560, plot_h = 340;
  // Points in pixels of the plot area, for overlaps and end labels.
  std::vector<std::vector<PlotPoint>> pixels(points.size());
  for (size_t s = 0; s < points.size(); ++s) {
    for (const auto& [x, y] : points[s]) {
      pixels[s].push_back({x_axis.Fraction(x) * plot_w, plot_h - y_axis.Fraction(y) * plot_h});
    }
  }
  const std::vector<std::vector<std::vector<int>>> same_spot = SeriesOnSameSpot(pixels);
  const std::vector<EndLabel> end_labels =
      PlaceEndLabels(pixels, plot_w, plot_h, kEndLabelSize + 3);
  double margin_labels_w = 0;
  for (const EndLabel& l : end_labels) {
    if (l.in_margin)
      margin_labels_w = std::max(margin_labels_w, TextWidth(EndLabelText(chart, l), kEndLabelSize));
  }
  const double legend_gap = margin_labels_w > 0 ? 10 + margin_labels_w + 20 : 30;

  const double y_tick_w = MaxTickWidth(y_axis);
  const double left = 20 + kLabelSize + 10 + y_tick_w + 8;
  const double legend_w = LegendWidth(legend);
  double width = left + plot_w + legend_gap + legend_w + 10;
  const double x_label_w = TextWidth(chart.x_label, kLabelSize);
  width = std::max(width, left + x_label_w + 20);
  const std::vector<std::string> title = TitleLines(chart.title, width);
  const double top = TitleHeight(title.size()) + 8;
  const double height = std::max(top + plot_h + 70, top + LegendHeight(legend) + 20);

  Svg svg;
  svg.Begin(width, height);
  DrawTitle(svg, title, width);
  DrawAxes(svg, x_axis, y_axis, left, top, plot_w, plot_h, chart.x_label, chart.y_label, y_tick_w);

  svg.Raw("<g class=\"data\">\n");
  for (size_t s = 0; s < chart.series.size(); ++s) {
    const int i = static_cast<int>(s);
    const char* colour = Colour(i);
    const std::string name = Escape(chart.series[s].name);
    svg.Raw("<g class=\"series\" data-series=\"" + name + "\">\n");
    std::string coords;
    for (const PlotPoint& p : pixels[s]) {
      if (!coords.empty()) coords += ' ';
      coords += Px(left + p.x) + "," + Px(top + p.y);
    }
    if (points[s].size() > 1) {
      svg.Raw("<polyline fill=\"none\" stroke=\"" + std::string(colour) +
              "\" stroke-width=\"2.2\" stroke-opacity=\"0.9\" stroke-linejoin=\"round\"" +
              DashOf(i) + " points=\"" + coords + "\"/>\n");
    }
    for (size_t p = 0; p < points[s].size(); ++p) {
      const auto& [x, y] = points[s][p];
      // A marker that later series cover on the same spot is drawn larger, so it shows as a ring
      // around theirs (up to 3 rings; the tooltip names every series there).
      const std::vector<int>& others = same_spot[s][p];
      const auto covering = std::min<std::ptrdiff_t>(
          3, std::count_if(others.begin(), others.end(), [i](int t) { return t > i; }));
      std::string tip = chart.series[s].name + ": " + ValueWithUnit(x, chart.x_label) + ", " +
                        ValueWithUnit(y, chart.y_label);
      if (!others.empty()) {
        tip += " (same spot:";
        for (size_t k = 0; k < others.size(); ++k) {
          tip += (k == 0 ? " " : ", ") + chart.series[static_cast<size_t>(others[k])].name;
        }
        tip += ")";
      }
      svg.Raw("<g class=\"point\">" +
              Marker(i, left + pixels[s][p].x, top + pixels[s][p].y, colour,
                     1.0 + 0.4 * static_cast<double>(covering)) +
              "<title>" + Escape(tip) + "</title></g>\n");
    }
    svg.Raw("</g>\n");
  }
  svg.Raw("</g>\n");
  DrawEndLabels(svg, chart, end_labels, left, top, plot_w);
  if (empty) {
    svg.Text(left + plot_w / 2, top + plot_h / 2, "no data", 16, "middle",
             "class=\"no-data\" fill=\"#888888\"");
  }
  DrawLegend(svg, legend, left + plot_w + legend_gap, top);
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
  // The tied categories of a drawn cell that are known categories.
  auto ties_of = [&map, &cell_of](size_t r, size_t c) {
    std::vector<TiedCategory> out;
    if (cell_of(r, c) < 0 || r >= map.ties.size() || c >= map.ties[r].size()) return out;
    for (const TiedCategory& t : map.ties[r][c]) {
      if (t.category >= 0 && static_cast<size_t>(t.category) < map.categories.size())
        out.push_back(t);
    }
    return out;
  };
  bool any_none = false, any_tie = false;
  double note_w = 0;
  for (size_t r = 0; r < rows; ++r) {
    for (size_t c = 0; c < cols; ++c) {
      any_none = any_none || cell_of(r, c) < 0;
      any_tie = any_tie || !ties_of(r, c).empty();
      note_w = std::max(note_w, TextWidth(note_of(r, c), 11));
    }
  }
  double x_tick_w = 0, y_tick_w = 0;
  for (const std::string& t : map.x_ticks)
    x_tick_w = std::max(x_tick_w, TextWidth(Shorten(t, 12), kTickSize));
  for (const std::string& t : map.y_ticks)
    y_tick_w = std::max(y_tick_w, TextWidth(Shorten(t, 16), kTickSize));
  const double cell_w = std::max({52.0, note_w + 10, x_tick_w + 8});
  const double cell_h = 30;

  std::vector<LegendEntry> legend;
  for (size_t k = 0; k < map.categories.size(); ++k) {
    legend.push_back(
        {map.categories[k], "<rect x=\"0\" y=\"0\" width=\"16\" height=\"12\" fill=\"" +
                                std::string(Colour(static_cast<int>(k))) + "\"/>\n"});
  }
  if (any_tie) {
    legend.push_back({map.tie_legend.empty() ? "band: ties" : map.tie_legend,
                      "<rect x=\"0\" y=\"0\" width=\"16\" height=\"12\" fill=\"#cccccc\"/>"
                      "<rect x=\"0\" y=\"7\" width=\"8\" height=\"5\" fill=\"#555555\" "
                      "stroke=\"#ffffff\" stroke-width=\"0.5\"/>"
                      "<rect x=\"8\" y=\"7\" width=\"8\" height=\"5\" fill=\"#999999\" "
                      "stroke=\"#ffffff\" stroke-width=\"0.5\"/>\n",
                      "legend-tie"});
  }
  if (any_none) {
    legend.push_back({"no valid plan",
                      "<rect x=\"0\" y=\"0\" width=\"16\" height=\"12\" fill=\"" +
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
      const std::vector<TiedCategory> ties = ties_of(r, c);
      std::string tip = map.y_label + " " + map.y_ticks[r] + ", " + map.x_label + " " +
                        map.x_ticks[c] + ": " + (k >= 0 ? name : "no valid plan");
      if (r < map.notes.size() && c < map.notes[r].size() && !map.notes[r][c].empty())
        tip += " (" + map.notes[r][c] + ")";
      std::string tied_names;
      for (size_t t = 0; t < ties.size(); ++t) {
        const std::string& tied = map.categories[static_cast<size_t>(ties[t].category)];
        tip += (t == 0 ? "; " + (map.tie_label.empty() ? std::string("tied") : map.tie_label) + ": "
                       : ", ") +
               tied;
        if (!ties[t].note.empty()) tip += " (" + ties[t].note + ")";
        tied_names += (t == 0 ? "" : ",") + tied;
      }
      svg.Raw("<g class=\"" + std::string(k >= 0 ? "cell" : "cell-none") + "\" data-series=\"" +
              Escape(name) + "\"" +
              (ties.empty() ? "" : " data-tied=\"" + Escape(tied_names) + "\"") + ">\n<title>" +
              Escape(tip) + "</title>\n");
      svg.Rect(x + 1, y + 1, cell_w - 2, cell_h - 2, fill);
      // A tied cell: its note moves up over a band of stripes, one per tied category.
      const double band_h = ties.empty() ? 0 : 8;
      if (!note.empty()) {
        svg.Text(x + cell_w / 2, y + (cell_h - band_h) / 2 + 4, note, 11, "middle",
                 std::string("fill=\"") + (k >= 0 ? TextOn(fill) : "#666666") + "\"");
      }
      if (!ties.empty()) {
        svg.Raw("<g class=\"tie-band\">\n");
        const double stripe_w = (cell_w - 2) / static_cast<double>(ties.size());
        for (size_t t = 0; t < ties.size(); ++t) {
          const int tied = ties[t].category;
          svg.Rect(x + 1 + stripe_w * static_cast<double>(t), y + cell_h - 1 - band_h, stripe_w,
                   band_h, Colour(tied),
                   "class=\"tie-stripe\" data-series=\"" +
                       Escape(map.categories[static_cast<size_t>(tied)]) +
                       "\" stroke=\"#ffffff\" stroke-width=\"0.8\"");
        }
        svg.Raw("</g>\n");
      }
      svg.Raw("</g>\n");
    }
  }
  svg.Raw("</g>\n<g class=\"axes\">\n");
  svg.Raw("<rect x=\"" + Px(left) + "\" y=\"" + Px(top) + "\" width=\"" + Px(grid_w) +
          "\" height=\"" + Px(grid_h) + "\" fill=\"none\" stroke=\"" + kAxis +
          "\" stroke-width=\"1\"/>\n");
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
  for (const std::string& l : timeline.lanes)
    lane_label_w = std::max(lane_label_w, TextWidth(Shorten(l, 24), kTickSize));
  const double lane_h = lanes > 48 ? 14 : lanes > 16 ? 20 : 30;
  const double plot_w = 720;
  const double plot_h = std::max(60.0, lane_h * static_cast<double>(lanes));
  std::vector<LegendEntry> legend;
  for (size_t k = 0; k < timeline.categories.size(); ++k) {
    legend.push_back(
        {timeline.categories[k], "<rect x=\"0\" y=\"0\" width=\"16\" height=\"12\" fill=\"" +
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
    const double y =
        top + static_cast<double>(lane) * lane_h + 2 + band_h * band[static_cast<size_t>(c)];
    const bool known = c < num_categories;
    const std::string name = known ? timeline.categories[static_cast<size_t>(c)] : "other";
    const char* fill = known ? Colour(c) : "#999999";
    const bool overlapping = conflict[static_cast<size_t>(c)][static_cast<size_t>(c)];
    svg.Raw("<rect class=\"bar\" data-series=\"" + Escape(name) + "\" x=\"" + Px(x) + "\" y=\"" +
            Px(y) + "\" width=\"" + Px(w) + "\" height=\"" + Px(std::max(1.0, band_h - 1)) +
            "\" fill=\"" + fill + "\"" + (overlapping ? " fill-opacity=\"0.6\"" : "") + "><title>" +
            Escape(timeline.lanes[lane] + ": " + name + ", " + Value(b.start) + " to " +
                   Value(b.end) + (unit.empty() ? "" : " " + unit)) +
            "</title></rect>\n");
  }
  svg.Raw("</g>\n<g class=\"axes\">\n");
  svg.Raw("<rect x=\"" + Px(left) + "\" y=\"" + Px(top) + "\" width=\"" + Px(plot_w) +
          "\" height=\"" + Px(plot_h) + "\" fill=\"none\" stroke=\"" + kAxis +
          "\" stroke-width=\"1\"/>\n");
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
