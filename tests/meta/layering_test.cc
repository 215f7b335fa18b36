// The real tree obeys the layering rules (tests/meta/layering_rules.h): no part includes a part
// above it or beside it, and each part's CMakeLists links exactly what its includes call for.
#include <gtest/gtest.h>

#include <filesystem>
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
  // Every folder rule names a folder of the tree (a moved folder must take its rule along).
  for (const Folder& folder : MeshplanRules().folders) {
    EXPECT_TRUE(
        std::filesystem::is_directory(std::filesystem::path(MESHPLAN_SOURCE_DIR) / folder.path))
        << folder.path;
  }
  // The check saw the tree: the CLI includes every part.
  EXPECT_NE(report.includes.find("tools/ includes: capacity"), std::string::npos)
      << report.includes;
}

}  // namespace
}  // namespace meshplan::layering
