#include "report/svg/series_overlaps.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace meshplan::plot {

bool SameSpot(const PlotPoint& a, const PlotPoint& b) {
  return std::fabs(a.x - b.x) <= kSameSpotPx && std::fabs(a.y - b.y) <= kSameSpotPx;
}

std::vector<std::vector<std::vector<int>>> SeriesOnSameSpot(
    const std::vector<std::vector<PlotPoint>>& series) {
  std::vector<std::vector<std::vector<int>>> out(series.size());
  for (size_t s = 0; s < series.size(); ++s) {
    out[s].resize(series[s].size());
    for (size_t p = 0; p < series[s].size(); ++p) {
      for (size_t t = 0; t < series.size(); ++t) {
        if (t == s) continue;
        const bool meets = std::any_of(series[t].begin(), series[t].end(), [&](const PlotPoint& q) {
          return SameSpot(series[s][p], q);
        });
        if (meets) out[s][p].push_back(static_cast<int>(t));
      }
    }
  }
  return out;
}

std::vector<EndLabel> PlaceEndLabels(const std::vector<std::vector<PlotPoint>>& series,
                                     double plot_w_px, double plot_h_px, double line_height_px) {
  std::vector<EndLabel> labels;
  for (size_t s = 0; s < series.size(); ++s) {
    if (series[s].empty()) continue;
    const PlotPoint end = series[s].back();
    auto shared = std::find_if(labels.begin(), labels.end(),
                               [&end](const EndLabel& l) { return SameSpot(l.end, end); });
    if (shared != labels.end()) {
      shared->series.push_back(static_cast<int>(s));
      continue;
    }
    EndLabel label;
    label.series = {static_cast<int>(s)};
    label.end = end;
    label.in_margin = end.x >= plot_w_px - kSameSpotPx;
    // Margin labels centre on the line's end (baseline a third of a line below it); the others
    // sit above the end, clear of its marker.
    label.baseline_y = label.in_margin ? end.y + line_height_px / 3 : end.y - 7;
    labels.push_back(label);
  }
  // Margin labels top to bottom, pushed down to one line apart, then back up from the bottom.
  std::vector<EndLabel*> margin;
  for (EndLabel& l : labels) {
    if (l.in_margin) margin.push_back(&l);
  }
  std::stable_sort(margin.begin(), margin.end(), [](const EndLabel* a, const EndLabel* b) {
    return a->baseline_y < b->baseline_y;
  });
  for (size_t i = 0; i < margin.size(); ++i) {
    double& y = margin[i]->baseline_y;
    y = std::max(y, i == 0 ? line_height_px * 0.75 : margin[i - 1]->baseline_y + line_height_px);
  }
  for (size_t i = margin.size(); i-- > 0;) {
    double& y = margin[i]->baseline_y;
    const double limit = i + 1 == margin.size() ? plot_h_px + line_height_px
                                                : margin[i + 1]->baseline_y - line_height_px;
    y = std::min(y, limit);
  }
  for (EndLabel* l : margin)
    l->moved = std::fabs(l->baseline_y - (l->end.y + line_height_px / 3)) > 0.5;
  return labels;
}

}  // namespace meshplan::plot
