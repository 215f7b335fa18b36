// The real tree obeys the layering rules (tests/meta/layering_rules.h): no part includes a part
// above it or beside it, and each part's CMakeLists links exactly what its includes call for.
#include <gtest/gtest.h>

#include <iostream>

#include "tests/meta/layering_check.h"
#include "tests/meta/layering_rules.h"

namespace meshplan::layering {
namespace {

TEST(Layering, TheSourceTreeFollowsTheRules) {
  const Report report = CheckLayering(MESHPLAN_SOURCE_DIR, MeshplanRules());
  // Which part includes which, with one file that does each, so that a failure reads in context.
  std::cout << report.includes;
  for (const std::string& violation : report.violations) ADD_FAILURE() << violation;
  // The check saw the tree: the CLI includes every part.
  EXPECT_NE(report.includes.find("tools/ includes: capacity"), std::string::npos) << report.includes;
}

}  // namespace
}  // namespace meshplan::layering
