// The scheme registry (planner/schemes/registry.cc): every scheme once, each entry making the
// strategy of its own scheme.
#include "planner/schemes/registry.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>

namespace meshplan::planner::schemes {
namespace {

TEST(SchemeRegistry, ListsEverySchemeOnceWithItsOwnStrategy) {
  std::map<Scheme, int> entries;
  for (const SchemeEntry& entry : Registry()) {
    ++entries[entry.scheme];
    const std::unique_ptr<Strategy> strategy = entry.make();
    ASSERT_NE(strategy, nullptr) << SchemeName(entry.scheme);
    EXPECT_EQ(strategy->scheme(), entry.scheme) << SchemeName(entry.scheme);
  }
  EXPECT_EQ(entries.size(), std::size(kAllSchemes));
  for (Scheme s : kAllSchemes) {
    EXPECT_EQ(entries[s], 1) << SchemeName(s);
    const std::unique_ptr<Strategy> strategy = MakeStrategy(s);
    ASSERT_NE(strategy, nullptr) << SchemeName(s);
    EXPECT_EQ(strategy->scheme(), s) << SchemeName(s);
  }
}

}  // namespace
}  // namespace meshplan::planner::schemes
