// The list syntax of sweeps (docs/capacity-planning.md, List syntax): every row of the table and
// every error the page names.
#include "capacity/sweep_lists.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "planner/schemes/registry.h"

namespace meshplan::capacity {
namespace {

std::vector<int64_t> Counts(const std::string& text) {
  auto values = ParseCountList(text, "--gpus");
  EXPECT_TRUE(values.ok()) << text << ": " << values.status().message();
  return values.ok() ? *values : std::vector<int64_t>{};
}

TEST(ParseCountList, TheDocumentedForms) {
  constexpr int64_t K = 1024, M = K * K;
  EXPECT_EQ(Counts("8,16,32"), (std::vector<int64_t>{8, 16, 32}));
  EXPECT_EQ(Counts("8..1024"), (std::vector<int64_t>{8, 16, 32, 64, 128, 256, 512, 1024}));
  EXPECT_EQ(Counts("128K..4M"), (std::vector<int64_t>{128 * K, 256 * K, 512 * K, M, 2 * M, 4 * M}));
  EXPECT_EQ(Counts("8..64:+8"), (std::vector<int64_t>{8, 16, 24, 32, 40, 48, 56, 64}));
  EXPECT_EQ(Counts("1K..1M:*4"), (std::vector<int64_t>{K, 4 * K, 16 * K, 64 * K, 256 * K, M}));
  EXPECT_EQ(Counts("8..100"), (std::vector<int64_t>{8, 16, 32, 64}));  // stops at the last <= HI
  EXPECT_EQ(Counts(" 2^20 , 8 "), (std::vector<int64_t>{M, 8}));
  // Items combine; duplicates are dropped, the first one kept.
  EXPECT_EQ(Counts("32,8..64:+8,128..256,8"),
            (std::vector<int64_t>{32, 8, 16, 24, 40, 48, 56, 64, 128, 256}));
}

TEST(ParseCountList, ErrorsNameTheFlagAndTheItem) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"8..4", {"'8..4'", "reversed"}},
      {"0..8", {"'0'", "must be positive"}},
      {"8..", {"'8..'", "needs both ends"}},
      {"..8", {"needs both ends"}},
      {"abc", {"'abc' is not a valid count"}},
      {"8..64:+0", {"'8..64:+0'", "step", "must be positive"}},
      {"8..64:x", {"step must be"}},
      {"8..64:*1", {"factor must be at least 2"}},
      {"8,,16", {"empty item"}},
      {"", {"empty list"}},
      {"1..1G:+1", {"more than 100000 values"}},
  };
  for (const auto& [text, needles] : cases) {
    auto values = ParseCountList(text, "--gpus");
    ASSERT_FALSE(values.ok()) << text;
    const std::string& message = values.status().message();
    EXPECT_EQ(message.rfind("--gpus", 0), 0u) << message;
    for (const std::string& needle : needles)
      EXPECT_NE(message.find(needle), std::string::npos) << message;
  }
}

TEST(ParseSchemeList, DropsDuplicatesAndRejectsUnknownNamesAndEmptyLists) {
  auto schemes = ParseSchemeList({"mesh", "ring", "mesh"}, "--schemes");
  ASSERT_TRUE(schemes.ok()) << schemes.status().message();
  EXPECT_EQ(*schemes, (std::vector<Scheme>{Scheme("mesh"), Scheme("ring")}));
  auto unknown = ParseSchemeList({"ring", "spiral"}, "--schemes");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("--schemes"), std::string::npos);
  EXPECT_NE(unknown.status().message().find("unknown scheme 'spiral'"), std::string::npos);
  auto empty = ParseSchemeList({}, "f.toml: schemes");
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().message(), "f.toml: schemes: empty list");
}

TEST(ParseCountList, TheLongestListParsesWithoutQuadraticDeduplication) {
  // 1..100000:+1 is kMaxListValues values; a linear search per value made it 5e9 comparisons.
  const auto start = std::chrono::steady_clock::now();
  auto values = ParseCountList("1..100000:+1", "--gpus");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(values.ok()) << values.status().message();
  EXPECT_EQ(values->size(), 100000u);
  EXPECT_EQ(values->back(), 100000);
  EXPECT_LT(seconds, 2.0);
}

TEST(ParseCountList, ZeroToAPowerInARangeIsAnError) {
  auto values = ParseCountList("0^2..8", "--gpus");
  ASSERT_FALSE(values.ok());
  EXPECT_EQ(
      values.status().message(),
      "--gpus: range '0^2..8': '0^2' is not a valid count: the base of a power must be at least 1");
}

}  // namespace
}  // namespace meshplan::capacity
