// Narrow-table number formats: significant digits, binary byte units, rounding across a digit.
#include "report/format/text_table.h"

#include <gtest/gtest.h>

namespace meshplan::report {
namespace {

constexpr double kKiB = 1024.0, kMiB = kKiB * 1024, kGiB = kMiB * 1024;

TEST(ShortBytes, ThreeSignificantDigitsInBinaryUnits) {
  EXPECT_EQ(ShortBytes(63 * kMiB), "63.0 MiB");
  EXPECT_EQ(ShortBytes(372 * kMiB), "372 MiB");
  // 1824522240 B = 1.6992... GiB.
  EXPECT_EQ(ShortBytes(1824522240.0), "1.70 GiB");
  EXPECT_EQ(ShortBytes(322.875 * kMiB), "323 MiB");
  EXPECT_EQ(ShortBytes(512), "512 B");
  EXPECT_EQ(ShortBytes(1.5 * kKiB), "1.50 KiB");
}

TEST(ShortBytes, RoundingUpToANewDigitDropsADecimal) {
  // 9.996 MiB would print as "10.00" with two decimals: four digits; one decimal keeps three.
  EXPECT_EQ(ShortBytes(9.996 * kMiB), "10.0 MiB");
  EXPECT_EQ(ShortBytes(99.96 * kMiB), "100 MiB");
  // Below 1024 MiB the unit stays MiB: 1000.4 MiB rounds to a whole number.
  EXPECT_EQ(ShortBytes(1000.4 * kMiB), "1000 MiB");
  EXPECT_EQ(ShortBytes(2 * kGiB), "2.00 GiB");
}

TEST(ShortSeconds, FourSignificantDigitsByDefault) {
  EXPECT_EQ(ShortSeconds(0.40340), "403.4 ms");
  EXPECT_EQ(ShortSeconds(0.028591), "28.59 ms");
  EXPECT_EQ(ShortSeconds(345.9e-6), "345.9 us");
  EXPECT_EQ(ShortSeconds(1.29e-3), "1.290 ms");
  EXPECT_EQ(ShortSeconds(1898.122), "1898 s");
  EXPECT_EQ(ShortSeconds(4.0512), "4.051 s");
  // 9.99996 ms has four nines after rounding to three decimals: "10.000" would be five digits.
  EXPECT_EQ(ShortSeconds(9.99996e-3), "10.00 ms");
}

TEST(ShortSeconds, ThreeDigitsOnRequest) {
  EXPECT_EQ(ShortSeconds(1.29e-3, 3), "1.29 ms");
  EXPECT_EQ(ShortSeconds(345.9e-6, 3), "346 us");
  EXPECT_EQ(ShortSeconds(6.101e-3, 3), "6.10 ms");
}

}  // namespace
}  // namespace meshplan::report
