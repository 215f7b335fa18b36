// Small text-formatting helpers for plain-text reports: fixed-point numbers, aligned columns.
#pragma once

#include <string>
#include <vector>

namespace meshplan::report {

// "%.*f"
std::string Fixed(double value, int digits);
// Rows laid out as aligned columns (two spaces apart), each line prefixed by `indent`; with
// `rule`, a line of dashes follows the first (header) row.
std::string Columns(const std::vector<std::vector<std::string>>& rows, const std::string& indent = "",
                    bool rule = false);

}  // namespace meshplan::report
