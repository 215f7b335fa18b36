#include "core/base/checked_math.h"

#include <gtest/gtest.h>

#include <limits>

namespace meshplan {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();  // 2^63 - 1

TEST(CheckedMathTest, ExactResultsThatFit) {
  EXPECT_EQ(CheckedMultiply(int64_t{1} << 31, int64_t{1} << 31), int64_t{1} << 62);
  EXPECT_EQ(CheckedMultiply(-3, 4), -12);
  EXPECT_EQ(CheckedAdd(kMax - 1, 1), kMax);
  EXPECT_EQ(CheckedProduct({}), 1);
  // 2^20 tokens x 64 heads x 128 dims = 2^(20+6+7) = 2^33.
  EXPECT_EQ(CheckedProduct({int64_t{1} << 20, 64, 128}), int64_t{1} << 33);
}

TEST(CheckedMathTest, OverflowIsNulloptNotAWrappedValue) {
  // 2^32 x 2^31 = 2^63, one past kMax.
  EXPECT_EQ(CheckedMultiply(int64_t{1} << 32, int64_t{1} << 31), std::nullopt);
  EXPECT_EQ(CheckedAdd(kMax, 1), std::nullopt);
  // Two lengths of 2^62 sum to 2^63, which a plain int64 sum wraps to -2^63.
  EXPECT_EQ(CheckedAdd(int64_t{1} << 62, int64_t{1} << 62), std::nullopt);
  // 2^62 (a --batch) x 2^20 (a --seq) = 2^82.
  EXPECT_EQ(CheckedProduct({int64_t{1} << 62, int64_t{1} << 20, 64, 128}), std::nullopt);
}

}  // namespace
}  // namespace meshplan
