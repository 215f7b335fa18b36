// Putting bytes that came from outside (file contents, flag values, paths) into one-line messages.
// A message must stay one line on a terminal whatever a file holds: control characters and bytes
// that are not UTF-8 are written as escapes instead of being passed through.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace meshplan {

// `text` with every control character (below 0x20, and 0x7f) written as \n, \r, \t or \xNN and
// every byte that is not part of a well-formed UTF-8 sequence written as \xNN; everything else,
// multi-byte UTF-8 characters and backslashes included, is kept. Idempotent, so a whole message
// can be passed through it after its parts were quoted with QuoteInput.
std::string EscapeControlBytes(std::string_view text);

// At most this many bytes of an input are quoted; the rest is summarised by its length.
inline constexpr size_t kMaxQuotedBytes = 120;

// 'text' in single quotes for a message: backslashes doubled, then EscapeControlBytes; longer
// than kMaxQuotedBytes, the first kMaxQuotedBytes bytes (cut before a character that would be
// split) followed by "... (N bytes)".
std::string QuoteInput(std::string_view text);

}  // namespace meshplan
