// The canvas of the SVG charts (report/svg/svg_plot.h): palette and sizes, an SVG writer, and the
// parts every chart shares (title, legend, axes frame with ticks and labels).
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "report/svg/plot_axes.h"
#include "report/svg/svg_text.h"

namespace meshplan::plot {

// Okabe-Ito: distinguishable with the common colour-vision deficiencies. Yellow last (weak on
// white); after 8 series the colours repeat with other marker shapes and dash patterns.
// Okabe-Ito's eight colour-blind-safe colours, then three of Paul Tol's (wine, teal, indigo): at
// least one colour per scheme (nine), so that no two schemes of a best-scheme map share one
// (issue 32: with eight colours the first and the ninth scheme were both drawn in blue).
inline constexpr const char* kPalette[] = {"#0072B2", "#E69F00", "#009E73", "#D55E00",
                                           "#CC79A7", "#56B4E9", "#000000", "#F0E442",
                                           "#882255", "#44AA99", "#332288"};
inline constexpr int kPaletteSize = 11;
inline constexpr const char* kGrid = "#e5e5e5";
inline constexpr const char* kAxis = "#444444";
inline constexpr const char* kText = "#222222";
inline constexpr const char* kNone = "#eeeeee";

// Colour of series or category `index` (the palette repeats after kPaletteSize).
const char* Colour(int index);
// Black or white, whichever reads better on `hex` ("#RRGGBB").
const char* TextOn(const char* hex);

inline constexpr double kTitleSize = 17;
inline constexpr double kLabelSize = 13;
inline constexpr double kTickSize = 11.5;
inline constexpr double kLegendSize = 12.5;
inline constexpr size_t kLegendMaxChars = 36;

// Builds an SVG document as text. Text() escapes its text; Raw() and `extra` attributes are
// written as they are (escape values with Escape()).
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
  void Rect(double x, double y, double w, double h, const char* fill,
            const std::string& extra = "") {
    out_ += "<rect x=\"" + Px(x) + "\" y=\"" + Px(y) + "\" width=\"" + Px(w) + "\" height=\"" +
            Px(h) + "\" fill=\"" + fill + "\"" + (extra.empty() ? "" : " " + extra) + "/>\n";
  }

 private:
  std::string out_;
};

// Title lines for a canvas `width` wide (at most 3), the height they take, and drawing them.
double TitleHeight(size_t lines);
std::vector<std::string> TitleLines(const std::string& title, double width);
void DrawTitle(Svg& svg, const std::vector<std::string>& lines, double width);

// A vertical legend at (x, y): one entry per name, `swatch` draws the key in a 16x12 box.
struct LegendEntry {
  std::string name;
  std::string swatch;  // SVG fragment drawn at origin (0..16, 0..12)
  std::string kind = "legend-entry";
};
double LegendWidth(const std::vector<LegendEntry>& entries);
double LegendHeight(const std::vector<LegendEntry>& entries);
// Entries are groups of class `kind` with data-series="name", the full name as a <title> tooltip
// and a shortened one as text.
void DrawLegend(Svg& svg, const std::vector<LegendEntry>& entries, double x, double y);

// Draws the frame, gridlines, ticks and axis labels of a plot area.
void DrawAxes(Svg& svg, const Axis& x_axis, const Axis& y_axis, double left, double top,
              double width, double height, const std::string& x_label, const std::string& y_label,
              double y_tick_width);
// The widest tick label of `axis`, in pixels.
double MaxTickWidth(const Axis& axis);

}  // namespace meshplan::plot
