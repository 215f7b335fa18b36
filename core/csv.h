// CSV output helpers shared by the reports.
#pragma once

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

}  // namespace meshplan
