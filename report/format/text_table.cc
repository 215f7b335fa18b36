#include "report/format/text_table.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace meshplan::report {

std::string Fixed(double value, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", digits, value);
  return buffer;
}

namespace {

// `value` (>= 0 after scaling to its unit) with `digits` significant digits before `unit`; at
// least the integer part.
std::string Significant(double value, int digits, const char* unit) {
  int decimals = digits - 1;
  for (double bound = 10.0;
       decimals > 0 && std::fabs(value) >= bound - 0.5 * std::pow(10.0, -decimals); bound *= 10) {
    --decimals;
  }
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f %s", decimals, value, unit);
  return buffer;
}

}  // namespace

std::string ShortSeconds(double seconds, int digits) {
  if (seconds >= 1.0) return Significant(seconds, digits, "s");
  if (seconds >= 1e-3) return Significant(seconds * 1e3, digits, "ms");
  return Significant(seconds * 1e6, digits, "us");
}

std::string ShortBytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (std::fabs(bytes) >= 1024.0 && unit < 4) {
    bytes /= 1024.0;
    ++unit;
  }
  if (unit == 0) return Fixed(bytes, 0) + " B";
  return Significant(bytes, 3, units[unit]);
}

std::string Columns(const std::vector<std::vector<std::string>>& rows, const std::string& indent,
                    bool rule) {
  std::vector<size_t> width;
  for (const auto& row : rows) {
    if (width.size() < row.size()) width.resize(row.size(), 0);
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  for (size_t r = 0; r < rows.size(); ++r) {
    std::string line = indent;
    for (size_t i = 0; i < rows[r].size(); ++i) {
      std::string cell = rows[r][i];
      cell.resize(width[i], ' ');
      line += (i ? "  " : "") + cell;
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
    if (rule && r == 0) {
      size_t total = 0;
      for (size_t w : width) total += w + 2;
      out += indent + std::string(total > 2 ? total - 2 : 0, '-') + "\n";
    }
  }
  return out;
}

}  // namespace meshplan::report
