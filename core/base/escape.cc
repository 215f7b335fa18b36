#include "core/base/escape.h"

#include <cstdio>

namespace meshplan {
namespace {

// Length of the well-formed UTF-8 sequence starting at text[i] (2 to 4), or 0 when the bytes
// there are not one (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF).
size_t Utf8SequenceLength(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  size_t length = 0;
  unsigned char low = 0x80, high = 0xbf;  // allowed range of the second byte
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    if (lead == 0xe0) low = 0xa0;   // overlong
    if (lead == 0xed) high = 0x9f;  // surrogates
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    if (lead == 0xf0) low = 0x90;   // overlong
    if (lead == 0xf4) high = 0x8f;  // above U+10FFFF
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  if (byte(i + 1) < low || byte(i + 1) > high) return 0;
  for (size_t k = 2; k < length; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xbf) return 0;
  }
  return length;
}

void AppendHexEscape(unsigned char c, std::string* out) {
  char buffer[8];
  std::snprintf(buffer, sizeof buffer, "\\x%02x", c);
  *out += buffer;
}

}  // namespace

std::string EscapeControlBytes(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      const size_t length = Utf8SequenceLength(text, i);
      if (length == 0) {
        AppendHexEscape(c, &out);
        ++i;
      } else {
        out.append(text.substr(i, length));
        i += length;
      }
      continue;
    }
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      AppendHexEscape(c, &out);
    } else {
      out += static_cast<char>(c);
    }
    ++i;
  }
  return out;
}

std::string QuoteInput(std::string_view text) {
  std::string_view shown = text;
  if (shown.size() > kMaxQuotedBytes) {
    size_t cut = kMaxQuotedBytes;
    // Back up over continuation bytes so a multi-byte character is not split.
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xc0) == 0x80) --cut;
    shown = text.substr(0, cut);
  }
  std::string doubled;
  doubled.reserve(shown.size());
  for (char c : shown) {
    if (c == '\\') doubled += '\\';
    doubled += c;
  }
  std::string out = "'" + EscapeControlBytes(doubled) + "'";
  if (shown.size() < text.size()) out += "... (" + std::to_string(text.size()) + " bytes)";
  return out;
}

}  // namespace meshplan
