#include "core/base/did_you_mean.h"

#include <algorithm>
#include <cctype>

namespace meshplan {

namespace {

// Edit distance of a and b, letters compared without case (bandwidth_gbps is bandwidth_GBps).
size_t CaselessDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      const bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                        std::tolower(static_cast<unsigned char>(b[j - 1]));
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string DidYouMean(std::string_view key, std::initializer_list<std::string_view> allowed) {
  return DidYouMean(key, std::span<const std::string_view>(allowed.begin(), allowed.size()));
}

std::string DidYouMean(std::string_view key, std::span<const std::string_view> allowed) {
  std::string_view best;
  size_t best_distance = std::max<size_t>(2, key.size() / 4) + 1;
  for (std::string_view a : allowed) {
    const size_t d = CaselessDistance(key, a);
    if (d < best_distance) {
      best = a;
      best_distance = d;
    }
  }
  return best.empty() ? "" : " (did you mean '" + std::string(best) + "'?)";
}

std::string DidYouMean(std::string_view key, const std::vector<std::string>& allowed) {
  const std::vector<std::string_view> views(allowed.begin(), allowed.end());
  return DidYouMean(key, std::span<const std::string_view>(views));
}

}  // namespace meshplan
