// CSV output helpers shared by the reports.
#pragma once

#include <charconv>
#include <cmath>
#include <string>

namespace meshplan {

// An RFC 4180 field: quoted (with doubled quotes) when it holds a comma, a quote or a line break.
inline std::string CsvField(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

// A number as the shortest text that reads back as the same double (std::to_chars), so CSV
// values keep full precision: 15393162788864 rather than 1.53932e+13. Not finite: empty field.
inline std::string CsvNumber(double value) {
  if (!std::isfinite(value)) return "";
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, result.ptr);
}

// A byte count as an integer (rounded), never in exponent notation; not finite: empty field.
inline std::string CsvBytes(double value) {
  if (!std::isfinite(value)) return "";
  return std::to_string(std::llround(value));
}

}  // namespace meshplan
