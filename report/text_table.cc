#include "report/text_table.h"

#include <algorithm>
#include <cstdio>

namespace meshplan::report {

std::string Fixed(double value, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", digits, value);
  return buffer;
}

std::string Columns(const std::vector<std::vector<std::string>>& rows, const std::string& indent, bool rule) {
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
