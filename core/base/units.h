// Units and the parsing of sizes given by people.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/base/status.h"

namespace meshplan {

inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
inline constexpr double kGB = 1e9;

// The largest exponent a count's power may have: 2^62 is the largest power of 2 in int64.
inline constexpr int64_t kMaxCountExponent = 62;

// Parses a positive count such as "4096", "512K", "1M", "2^20", "3*2^18".
// K, M, G are binary (2^10, 2^20, 2^30): "1M" tokens is 1048576 tokens, which is what
// long-context papers mean by 1M. Rejects zero, negatives, fractions and overflow; a power has one
// '^' and a base of at least 1, and its value is decided before any multiplying (1^N is 1, a
// larger base with an exponent above kMaxCountExponent is too large), so any text is parsed in
// time proportional to its length.
Result<int64_t> ParseCount(std::string_view text);

// Memory held back per GPU (--reserve-gib, a sweep file's reserve_gib) is at most this many GiB,
// as a GPU's memory is at most kMaxGpuMemoryGB (core/cluster/topology.h) GB.
inline constexpr double kMaxReserveGiB = 1e6;
// A reserve in GiB: finite, not negative, at most kMaxReserveGiB; the caller adds the flag or key.
Status CheckReserveGiB(double gib);

// "1.00 GiB", "512.0 MiB", "12 B": for tables.
std::string FormatBytes(double bytes);
// "1.23 s", "45.6 ms", "789 us".
std::string FormatSeconds(double seconds);
// "1M", "512K", "3000": the shortest exact binary-suffix form of a count.
std::string FormatCount(int64_t count);

}  // namespace meshplan
