// Text for the SVG charts (report/svg/svg_plot.h): XML escaping, lengths and widths of UTF-8 text,
// shortening and wrapping, and numbers as coordinates and as tooltip values.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace meshplan::plot {

// XML text and attribute escaping. Control characters that XML 1.0 forbids and malformed UTF-8
// become '?', so any input gives a well-formed document.
std::string Escape(std::string_view text);

// Characters (UTF-8 code points), not bytes.
size_t TextLength(std::string_view text);

// At most `max_chars` characters; a shortened text ends in an ellipsis.
std::string Shorten(std::string_view text, size_t max_chars);

// Estimated width in pixels of `text` at `font_size` (sans-serif averages about 0.6 em).
double TextWidth(std::string_view text, double font_size);

// Splits `text` at spaces into at most `max_lines` lines of at most `max_chars` characters (a
// longer word is shortened; a cut last line ends in an ellipsis).
std::vector<std::string> Wrap(const std::string& text, size_t max_chars, size_t max_lines);

// Pixel coordinates with one decimal ("0.0" for a non-finite value).
std::string Px(double v);

// Data values in tooltips: up to 4 significant digits (whole numbers from 1000), no exponent for
// everyday magnitudes.
std::string Value(double v);

// The unit inside the last parentheses of an axis label, up to a comma: "time (ms)" -> "ms",
// "GPUs (count, log scale)" -> "count".
std::string UnitOf(const std::string& label);

// A value with its axis's unit for tooltips: "51.42 ms"; a count takes the label's name instead
// ("8 GPUs" on "GPUs (count, log scale)").
std::string ValueWithUnit(double v, const std::string& label);

}  // namespace meshplan::plot
