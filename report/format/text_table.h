// Small text-formatting helpers for plain-text reports: fixed-point numbers, aligned columns.
#pragma once

#include <string>
#include <vector>

namespace meshplan::report {

// "%.*f"
std::string Fixed(double value, int digits);
// Bytes with three significant digits in binary units, for narrow tables: "63.0 MiB", "372 MiB",
// "1.45 GiB", "512 B" (core/base/units.h's FormatBytes keeps two decimals).
std::string ShortBytes(double bytes);
// Seconds with `digits` significant digits (at least the integer part), for narrow tables: with 4,
// "403.4 ms", "28.59 ms", "345.9 us", "1.290 ms", "1898 s"; with 3, "1.29 ms", "346 us"
// (core/base/units.h's FormatSeconds keeps a fixed number of decimals).
std::string ShortSeconds(double seconds, int digits = 4);
// Rows laid out as aligned columns (two spaces apart), each line prefixed by `indent`; with
// `rule`, a line of dashes follows the first (header) row.
std::string Columns(const std::vector<std::vector<std::string>>& rows,
                    const std::string& indent = "", bool rule = false);

}  // namespace meshplan::report
