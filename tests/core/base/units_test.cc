#include "core/base/units.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <string>

namespace meshplan {
namespace {

TEST(ParseCountTest, AcceptsPlainSuffixedAndPowerForms) {
  EXPECT_EQ(*ParseCount("4096"), 4096);
  EXPECT_EQ(*ParseCount("1M"), 1048576);   // binary: 2^20
  EXPECT_EQ(*ParseCount("512K"), 524288);  // 512 * 1024
  EXPECT_EQ(*ParseCount("1G"), 1073741824);
  EXPECT_EQ(*ParseCount("2^20"), 1048576);
  EXPECT_EQ(*ParseCount("3*2^18"), 786432);  // 3 * 262144
  EXPECT_EQ(*ParseCount("1m"), 1048576);     // suffixes are case-insensitive
  EXPECT_EQ(*ParseCount(" 8 "), 8);
}

TEST(ParseCountTest, RejectsZeroNegativeFractionsGarbageAndOverflow) {
  for (const char* text : {"0", "-1", "1.5", "abc", "", "K", "2^", "*4", "0*5", "1e6"}) {
    auto result = ParseCount(text);
    EXPECT_FALSE(result.ok()) << text;
    if (!result.ok()) {
      EXPECT_EQ(result.status().code(), ErrorCode::kInvalidInput) << text;
    }
  }
  // 2^63 does not fit in int64; neither does 8G^3 = 2^99 nor a 20-digit number.
  for (const char* text : {"9223372036854775808", "2^63", "8G*8G*8G", "99999999999999999999"}) {
    auto result = ParseCount(text);
    EXPECT_FALSE(result.ok()) << text;
    if (!result.ok()) {
      EXPECT_NE(result.status().message().find("too large"), std::string::npos) << text;
    }
  }
  EXPECT_EQ(*ParseCount("1099511627776"), int64_t{1} << 40);  // large but representable
}

TEST(ParseCountTest, ErrorsQuoteTheInput) {
  auto result = ParseCount("12x");
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("'12x'"), std::string::npos);
}

TEST(FormatCountTest, ShortestExactBinarySuffix) {
  EXPECT_EQ(FormatCount(1048576), "1M");
  EXPECT_EQ(FormatCount(524288), "512K");
  EXPECT_EQ(FormatCount(786432), "768K");  // 3*2^18 = 768 * 1024, not a whole M
  EXPECT_EQ(FormatCount(int64_t{1} << 30), "1G");
  EXPECT_EQ(FormatCount(int64_t{3} << 30), "3G");
  EXPECT_EQ(FormatCount(3000), "3000");
  EXPECT_EQ(FormatCount(1536), "1536");  // 1.5K is not exact
  EXPECT_EQ(FormatCount(1), "1");
}

TEST(FormatCountTest, RoundTripsThroughParseCount) {
  for (int64_t n : {int64_t{1}, int64_t{1000}, int64_t{4096}, int64_t{786432}, int64_t{1} << 33}) {
    EXPECT_EQ(*ParseCount(FormatCount(n)), n);
  }
}

TEST(FormatBytesTest, BinaryUnits) {
  EXPECT_EQ(FormatBytes(12), "12 B");
  EXPECT_EQ(FormatBytes(1024), "1.00 KiB");
  EXPECT_EQ(FormatBytes(1.5 * 1024 * 1024), "1.50 MiB");
  EXPECT_EQ(FormatBytes(kGiB), "1.00 GiB");
  EXPECT_EQ(FormatBytes(80e9), "74.51 GiB");  // 80e9 / 2^30 = 74.505...
  EXPECT_EQ(FormatBytes(2.0 * 1024 * kGiB), "2.00 TiB");
}

TEST(FormatSecondsTest, PicksTheUnit) {
  EXPECT_NE(FormatSeconds(1.5).find(" s"), std::string::npos);
  EXPECT_EQ(FormatSeconds(1.5).rfind("1.5", 0), 0u);
  EXPECT_NE(FormatSeconds(0.0456).find(" ms"), std::string::npos);
  EXPECT_EQ(FormatSeconds(0.0456).rfind("45.6", 0), 0u);
  EXPECT_NE(FormatSeconds(789e-6).find(" us"), std::string::npos);
  EXPECT_EQ(FormatSeconds(789e-6).rfind("789", 0), 0u);
}

// Issue 17: "0^2" (as --seq, in a sweep file or a documents file) died with SIGFPE, a division by
// the base 0 in the overflow check of the power loop.
TEST(ParseCountTest, ZeroToAPowerIsAnErrorNotSigfpe) {
  for (const char* text : {"0^2", "0^0", "0^1*4"}) {
    auto result = ParseCount(text);
    ASSERT_FALSE(result.ok()) << text;
    EXPECT_EQ(
        result.status().message(),
        "'" + std::string(text) + "' is not a valid count: the base of a power must be at least 1");
  }
}

// Issue 17: "1^9999999999" spun about 11 s multiplying 1 by 1. A power's value is now decided
// before the loop: every power of 1 is 1, and a base of 2 or more overflows int64 past the
// exponent 62 (2^62 is the largest power of 2 in int64), so the loop never runs more than 62 times.
TEST(ParseCountTest, HugeExponentIsDecidedWithoutLooping) {
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(*ParseCount("1^9999999999"), 1);
  auto result = ParseCount("2^9999999999");
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(
      result.status().message(),
      "'2^9999999999' is not a valid count: too large (exponent 9999999999 is larger than 62)");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 0.5);
  EXPECT_EQ(*ParseCount("2^62"), int64_t{1} << 62);
  EXPECT_EQ(*ParseCount("3^0"), 1);
}

TEST(ParseCountTest, ChainedPowersAreRefusedWithoutDeepRecursion) {
  auto result = ParseCount("2^3^2");
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().message(), "'2^3^2' is not a valid count: a power takes one '^'");
  // 100,000 carets: refused at once rather than parsed by a recursion 100,000 frames deep.
  std::string deep = "2";
  for (int i = 0; i < 100000; ++i) deep += "^2";
  result = ParseCount(deep);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("a power takes one '^'"), std::string::npos);
}

TEST(ParseCountTest, ControlBytesInTheInputAreEscapedInTheMessage) {
  // A newline and an ESC from a file must not break the message into lines or reach a terminal.
  auto result = ParseCount("12\n3\x1b");
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().message(),
            "'12\\n3\\x1b' is not a valid count: unexpected character '\\n'");
}

TEST(CheckReserveGiBTest, FiniteNotNegativeAtMostAMillion) {
  EXPECT_TRUE(CheckReserveGiB(0).ok());
  EXPECT_TRUE(CheckReserveGiB(40).ok());
  EXPECT_TRUE(CheckReserveGiB(1e6).ok());
  EXPECT_EQ(CheckReserveGiB(-1).message(), "must not be negative");
  // Issue 17: --reserve-gib nan and 1e308 ran without a word.
  for (double bad : {std::nan(""), 1e308, HUGE_VAL, 1e6 * 1.000001}) {
    EXPECT_EQ(CheckReserveGiB(bad).message(), "must be a finite number of GiB, at most 1e6") << bad;
  }
}

}  // namespace
}  // namespace meshplan
