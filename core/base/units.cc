#include "core/base/units.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>

#include "core/base/checked_math.h"
#include "core/base/escape.h"

namespace meshplan {
namespace {

// Parses one factor: digits with an optional K/M/G suffix, or base^exponent.
Result<int64_t> ParseFactor(std::string_view text, std::string_view whole) {
  auto bad = [&](const std::string& why) {
    return Status::Invalid(QuoteInput(whole) + " is not a valid count: " + why);
  };
  if (text.empty()) return bad("empty factor");
  size_t caret = text.find('^');
  if (caret != std::string_view::npos) {
    // One caret per factor: "2^3^2" is refused rather than parsed by recursion as deep as the
    // text is long.
    if (text.find('^', caret + 1) != std::string_view::npos) return bad("a power takes one '^'");
    auto base = ParseFactor(text.substr(0, caret), whole);
    if (!base.ok()) return base;
    auto exponent = ParseFactor(text.substr(caret + 1), whole);
    if (!exponent.ok()) return exponent;
    // Decided before the loop, so a huge exponent costs nothing: a power of 0 is never a positive
    // count, every power of 1 is 1, and a base of 2 or more exceeds int64 past the exponent 62.
    if (*base < 1) return bad("the base of a power must be at least 1");
    if (*base == 1) return int64_t{1};
    if (*exponent > kMaxCountExponent) {
      return bad("too large (exponent " + std::to_string(*exponent) + " is larger than " +
                 std::to_string(kMaxCountExponent) + ")");
    }
    int64_t value = 1;
    for (int64_t i = 0; i < *exponent; ++i) {
      auto next = CheckedMultiply(value, *base);
      if (!next) return bad("too large");
      value = *next;
    }
    return value;
  }
  int64_t multiplier = 1;
  char last = static_cast<char>(std::toupper(static_cast<unsigned char>(text.back())));
  if (last == 'K' || last == 'M' || last == 'G') {
    multiplier = last == 'K' ? (1LL << 10) : last == 'M' ? (1LL << 20) : (1LL << 30);
    text.remove_suffix(1);
  }
  if (text.empty()) return bad("missing digits");
  int64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9')
      return bad("unexpected character " + QuoteInput(std::string_view(&c, 1)));
    const int64_t digit = c - '0';
    if (value > (std::numeric_limits<int64_t>::max() - digit) / 10) return bad("too large");
    value = value * 10 + digit;
  }
  if (value > std::numeric_limits<int64_t>::max() / multiplier) return bad("too large");
  return value * multiplier;
}

}  // namespace

Result<int64_t> ParseCount(std::string_view text) {
  std::string_view whole = text;
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
    text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.remove_suffix(1);
  if (text.empty()) return Status::Invalid("empty value where a count was expected");
  if (text.front() == '-') {
    return Status::Invalid(QuoteInput(whole) + " must be positive");
  }
  int64_t product = 1;
  size_t start = 0;
  while (true) {
    size_t star = text.find('*', start);
    auto factor = ParseFactor(
        text.substr(start, star == std::string_view::npos ? star : star - start), whole);
    if (!factor.ok()) return factor;
    auto next = CheckedMultiply(product, *factor);
    if (!next) return Status::Invalid(QuoteInput(whole) + " is too large");
    product = *next;
    if (star == std::string_view::npos) break;
    start = star + 1;
  }
  if (product <= 0) return Status::Invalid(QuoteInput(whole) + " must be positive");
  return product;
}

Status CheckReserveGiB(double gib) {
  if (gib < 0) return Status::Invalid("must not be negative");
  if (!std::isfinite(gib) || gib > kMaxReserveGiB) {
    return Status::Invalid("must be a finite number of GiB, at most 1e6");
  }
  return Status::Ok();
}

std::string FormatBytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (std::fabs(bytes) >= 1024.0 && unit < 4) {
    bytes /= 1024.0;
    ++unit;
  }
  char buffer[64];
  if (unit == 0) {
    std::snprintf(buffer, sizeof buffer, "%.0f B", bytes);
  } else {
    std::snprintf(buffer, sizeof buffer, "%.2f %s", bytes, units[unit]);
  }
  return buffer;
}

std::string FormatSeconds(double seconds) {
  char buffer[64];
  if (seconds >= 1.0) {
    std::snprintf(buffer, sizeof buffer, "%.3f s", seconds);
  } else if (seconds >= 1e-3) {
    std::snprintf(buffer, sizeof buffer, "%.2f ms", seconds * 1e3);
  } else {
    std::snprintf(buffer, sizeof buffer, "%.1f us", seconds * 1e6);
  }
  return buffer;
}

std::string FormatCount(int64_t count) {
  if (count > 0 && count % (1LL << 30) == 0) return std::to_string(count >> 30) + "G";
  if (count > 0 && count % (1LL << 20) == 0) return std::to_string(count >> 20) + "M";
  if (count > 0 && count % (1LL << 10) == 0) return std::to_string(count >> 10) + "K";
  return std::to_string(count);
}

}  // namespace meshplan
