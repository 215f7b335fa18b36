#include "core/base/escape.h"

#include <gtest/gtest.h>

#include <string>

namespace meshplan {
namespace {

TEST(EscapeControlBytesTest, ControlCharactersBecomeEscapes) {
  EXPECT_EQ(EscapeControlBytes("a\nb\rc\td"), "a\\nb\\rc\\td");
  EXPECT_EQ(EscapeControlBytes(std::string("x\0y", 3)), "x\\x00y");
  EXPECT_EQ(EscapeControlBytes("\x1b[31m"), "\\x1b[31m");  // a terminal escape sequence
  EXPECT_EQ(EscapeControlBytes("\x7f"), "\\x7f");
  EXPECT_EQ(EscapeControlBytes("plain text, a\\b"), "plain text, a\\b");  // backslashes kept
}

TEST(EscapeControlBytesTest, WellFormedUtf8IsKeptAndEverythingElseEscaped) {
  EXPECT_EQ(EscapeControlBytes("caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x98\x80"),
            "caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x98\x80");
  EXPECT_EQ(EscapeControlBytes("\xff\xfe"), "\\xff\\xfe");  // never valid in UTF-8
  EXPECT_EQ(EscapeControlBytes("\xc3"), "\\xc3");           // a lead byte cut off at the end
  EXPECT_EQ(EscapeControlBytes("\xc0\xaf"), "\\xc0\\xaf");  // overlong '/'
  EXPECT_EQ(EscapeControlBytes("\xed\xa0\x80"), "\\xed\\xa0\\x80");           // a UTF-16 surrogate
  EXPECT_EQ(EscapeControlBytes("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // above U+10FFFF
}

TEST(EscapeControlBytesTest, IsIdempotent) {
  const std::string once = EscapeControlBytes("a\nb\xff\xc3\xa9");
  EXPECT_EQ(EscapeControlBytes(once), once);
}

TEST(QuoteInputTest, QuotesDoublesBackslashesAndEscapes) {
  EXPECT_EQ(QuoteInput("1M"), "'1M'");
  EXPECT_EQ(QuoteInput("1\n2"), "'1\\n2'");
  // A literal backslash-n in the input stays distinguishable from a newline.
  EXPECT_EQ(QuoteInput("1\\n2"), "'1\\\\n2'");
}

TEST(QuoteInputTest, LongInputIsCutWithItsLength) {
  const std::string long_text(500, 'x');
  EXPECT_EQ(QuoteInput(long_text), "'" + std::string(kMaxQuotedBytes, 'x') + "'... (500 bytes)");
  // 119 ASCII bytes then a 2-byte character straddling the cut at 120: the cut moves before it.
  const std::string straddling = std::string(119, 'a') + "\xc3\xa9" + "tail";
  EXPECT_EQ(QuoteInput(straddling), "'" + std::string(119, 'a') + "'... (125 bytes)");
}

}  // namespace
}  // namespace meshplan
