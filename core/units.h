// Units and the parsing of sizes given by people.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace meshplan {

inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
inline constexpr double kGB = 1e9;

// Parses a positive count such as "4096", "512K", "1M", "2^20", "3*2^18".
// K, M, G are binary (2^10, 2^20, 2^30): "1M" tokens is 1048576 tokens, which is what
// long-context papers mean by 1M. Rejects zero, negatives, fractions and overflow.
Result<int64_t> ParseCount(std::string_view text);

// "1.00 GiB", "512.0 MiB", "12 B": for tables.
std::string FormatBytes(double bytes);
// "1.23 s", "45.6 ms", "789 us".
std::string FormatSeconds(double seconds);
// "1M", "512K", "3000": the shortest exact binary-suffix form of a count.
std::string FormatCount(int64_t count);

}  // namespace meshplan
