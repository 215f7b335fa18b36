// SVG charts for capacity-planning reports: readable without explanation (title, axes with
// units, legend). Pure functions from data to SVG text; no I/O.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace meshplan::plot {

struct Series {
  std::string name;                               // legend entry
  std::vector<std::pair<double, double>> points;  // (x, y), any order; sorted by x when drawn
};

// Lines with markers, one per series, optional log2 x axis and log10 y axis. Series that overlap
// stay visible: each has its own colour, marker shape and dash pattern; a marker that later series
// cover at the same spot is drawn larger, so stacked points show as rings, and its tooltip names
// the series there; each line ends in a direct label, one shared label for lines that end at the
// same spot ("series-a, series-b, series-c").
struct LineChart {
  std::string title;
  std::string x_label;  // with unit, e.g. "GPUs"
  std::string y_label;  // with unit, e.g. "time per step (ms)"
  bool log_x = false;   // log2 ticks (GPU counts, sequence lengths)
  bool log_y = false;   // log10 ticks
  std::vector<Series> series;
};
std::string RenderLineChart(const LineChart& chart);

// A category that ties with a cell's own (no clear winner), with its short note (e.g. its time).
struct TiedCategory {
  int category = 0;  // index into CategoryMap::categories
  std::string note;
};

// A grid of categories, e.g. the best scheme for each (GPU count, sequence length).
struct CategoryMap {
  std::string title;
  std::string x_label, y_label;
  std::vector<std::string> x_ticks, y_ticks;    // column and row labels
  std::vector<std::string> categories;          // legend, one colour each
  std::vector<std::vector<int>> cells;          // [row][column]: index into categories, -1 = none
  std::vector<std::vector<std::string>> notes;  // optional short text per cell (may be empty)
  // Optional, [row][column]: the other categories that tie with the cell's. A tied cell has a
  // band along its bottom, one stripe per tied category in its colour; its tooltip lists them
  // after `tie_label` ("one (45.6 ms); within 0.5%: other (45.7 ms)"), and the legend explains
  // the band with `tie_legend`.
  std::vector<std::vector<std::vector<TiedCategory>>> ties;
  std::string tie_label;   // e.g. "within 0.5%"
  std::string tie_legend;  // e.g. "band: other schemes within 0.5%"
};
std::string RenderCategoryMap(const CategoryMap& map);

// A Gantt chart: one lane per rank (or per rank and stream), bars coloured by category.
struct Timeline {
  std::string title;
  std::string time_label;  // e.g. "time (ms)"
  std::vector<std::string> lanes;
  std::vector<std::string> categories;
  struct Bar {
    int lane = 0;
    double start = 0, end = 0;  // in the unit of time_label
    int category = 0;
  };
  std::vector<Bar> bars;
};
std::string RenderTimeline(const Timeline& timeline);

}  // namespace meshplan::plot
