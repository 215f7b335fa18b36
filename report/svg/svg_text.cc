#include "report/svg/svg_text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace meshplan::plot {
namespace {

// Length of the well-formed UTF-8 sequence at text[i], or 0 when it is malformed.
size_t Utf8Length(std::string_view text, size_t i) {
  const auto byte = [&text](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char c = byte(i);
  size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  if (n == 0 || i + n > text.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  }
  return n;
}

bool IsContinuationByte(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

}  // namespace

// XML text and attribute escaping. Control characters that XML 1.0 forbids and malformed UTF-8
// become '?', so any input gives a well-formed document.
std::string Escape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 8);
  for (size_t i = 0; i < text.size();) {
    const char c = text[i];
    const size_t n = Utf8Length(text, i);
    if (n == 0) {
      out += '?';
      ++i;
      continue;
    }
    if (n > 1) {
      out.append(text.substr(i, n));
      i += n;
      continue;
    }
    ++i;
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r') {
          out += '?';
        } else {
          out += c;
        }
    }
  }
  return out;
}

// Characters (UTF-8 code points), not bytes.
size_t TextLength(std::string_view text) {
  size_t n = 0;
  for (char c : text) n += IsContinuationByte(c) ? 0 : 1;
  return n;
}

// At most `max_chars` characters; a shortened text ends in an ellipsis.
std::string Shorten(std::string_view text, size_t max_chars) {
  if (TextLength(text) <= max_chars || max_chars < 2) return std::string(text);
  size_t chars = 0, i = 0;
  for (; i < text.size(); ++i) {
    if (!IsContinuationByte(text[i])) {
      if (chars == max_chars - 1) break;
      ++chars;
    }
  }
  return std::string(text.substr(0, i)) + "\u2026";
}

// Estimated width in pixels of `text` at `font_size` (sans-serif averages about 0.6 em).
double TextWidth(std::string_view text, double font_size) {
  return static_cast<double>(TextLength(text)) * font_size * 0.6;
}

// Splits `text` at spaces into lines of at most `max_chars` characters (a longer word is
// shortened).
std::vector<std::string> Wrap(const std::string& text, size_t max_chars, size_t max_lines) {
  std::vector<std::string> lines;
  std::string line;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(start, end - start);
    start = end + 1;
    if (word.empty()) continue;
    if (line.empty()) {
      line = word;
    } else if (TextLength(line) + 1 + TextLength(word) <= max_chars) {
      line += " " + word;
    } else {
      lines.push_back(Shorten(line, max_chars));
      line = word;
    }
  }
  if (!line.empty() || lines.empty()) lines.push_back(Shorten(line, max_chars));
  if (lines.size() > max_lines) {
    lines.resize(max_lines);
    lines.back() = Shorten(lines.back() + " \u2026", max_chars);
  }
  return lines;
}

// Pixel coordinates with one decimal.
std::string Px(double v) {
  if (!std::isfinite(v)) v = 0;  // never "nan" in a coordinate
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f", v);
  return buffer;
}

// Data values in tooltips: up to 4 significant digits (whole numbers from 1000), no exponent for
// everyday magnitudes.
std::string Value(double v) {
  char buffer[32];
  if (v != 0 && (std::fabs(v) >= 1e7 || std::fabs(v) < 1e-3)) {
    std::snprintf(buffer, sizeof buffer, "%.3g", v);
  } else if (std::fabs(v) >= 1e3 ||
             std::fabs(v - std::round(v)) < 1e-9 * std::max(1.0, std::fabs(v))) {
    std::snprintf(buffer, sizeof buffer, "%.0f", v);
  } else {
    std::snprintf(buffer, sizeof buffer, "%.4g", v);
  }
  return buffer;
}

// The unit inside the last parentheses of an axis label, up to a comma: "time (ms)" -> "ms",
// "GPUs (count, log scale)" -> "count".
std::string UnitOf(const std::string& label) {
  const size_t open = label.rfind('(');
  const size_t close = label.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return "";
  const std::string inside = label.substr(open + 1, close - open - 1);
  return inside.substr(0, inside.find(','));
}

// A value with its axis's unit for tooltips: "51.42 ms"; a count takes the label's name instead
// ("8 GPUs" on "GPUs (count, log scale)").
std::string ValueWithUnit(double v, const std::string& label) {
  std::string unit = UnitOf(label);
  if (unit == "count") {
    const size_t open = label.rfind('(');
    unit = label.substr(0, open == 0 ? 0 : label.find_last_not_of(' ', open - 1) + 1);
  }
  return Value(v) + (unit.empty() ? "" : " " + unit);
}

}  // namespace meshplan::plot
