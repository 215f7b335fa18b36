#include "report/svg/svg_canvas.h"

#include <algorithm>
#include <cmath>

namespace meshplan::plot {

const char* Colour(int index) {
  return kPalette[((index % kPaletteSize) + kPaletteSize) % kPaletteSize];
}

const char* TextOn(const char* hex) {
  auto channel = [hex](int at) {
    const double v = std::stoi(std::string(hex + at, 2), nullptr, 16) / 255.0;
    return v <= 0.03928 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4);
  };
  const double luminance = 0.2126 * channel(1) + 0.7152 * channel(3) + 0.0722 * channel(5);
  return luminance > 0.22 ? "#000000" : "#ffffff";
}

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
          "\" height=\"" + Px(height) + "\" fill=\"none\" stroke=\"" + kAxis +
          "\" stroke-width=\"1\"/>\n");
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

}  // namespace meshplan::plot
