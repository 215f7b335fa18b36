#include "report/format/progress_text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace meshplan::report {

std::string FormatClock(double seconds) {
  const long long s = std::isfinite(seconds) && seconds > 0 ? static_cast<long long>(seconds) : 0;
  char buffer[32];
  if (s >= 3600) {
    std::snprintf(buffer, sizeof buffer, "%lld:%02lld:%02lld", s / 3600, s / 60 % 60, s % 60);
  } else {
    std::snprintf(buffer, sizeof buffer, "%lld:%02lld", s / 60, s % 60);
  }
  return buffer;
}

std::string ProgressBarText(std::string_view label, int64_t done, int64_t total, double elapsed_s,
                            bool time_left) {
  total = std::max<int64_t>(total, 0);
  done = std::clamp<int64_t>(done, 0, total);
  // Integer arithmetic: exact at every count (no 0.999... below a full cell).
  const int64_t filled = total > 0 ? done * kProgressBarCells / total : 0;
  const int64_t percent = total > 0 ? done * 100 / total : 0;
  std::string text = "meshplan: " + std::string(label) + " [" +
                     std::string(static_cast<size_t>(filled), '#') +
                     std::string(static_cast<size_t>(kProgressBarCells - filled), ' ') + "] " +
                     std::to_string(done) + "/" + std::to_string(total);
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "  %3lld%%  ", static_cast<long long>(percent));
  text += buffer + FormatClock(elapsed_s);
  if (time_left && done > 0 && done < total) {
    const double left = elapsed_s * static_cast<double>(total - done) / static_cast<double>(done);
    text += ", about " + FormatClock(left) + " left";
  }
  return text;
}

}  // namespace meshplan::report
