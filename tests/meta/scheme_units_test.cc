// "A scheme is one unit" (tests/meta/scheme_units.h): the real tree names no scheme outside its
// unit and the registry, and fake trees show that each rule of the checker can fail.
#include "tests/meta/scheme_units.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace meshplan::scheme_units {
namespace {

namespace fs = std::filesystem;

// The common-word names and the parameter keys among them are the test's knowledge of the
// domain, not a list of schemes: "ring", "mesh" and "ulysses" are also a ring pass, the Mesh
// tile family and the Ulysses all-to-all; "ring" and "ulysses" are also plan-file keys (the ring
// and head-parallel degrees of SchemeParams, docs/plan-format.md).
Options DomainOptions(std::vector<std::string> schemes) {
  return Options{std::move(schemes), {"ring", "mesh", "ulysses"}, {"ring", "ulysses"}};
}

// The binary's own list: the registry as users see it.
std::vector<std::string> RegisteredSchemes() {
  std::vector<std::string> names;
  FILE* pipe = popen(MESHPLAN_BINARY " plan --list-schemes", "r");
  if (pipe == nullptr) return names;
  char buffer[512];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) {
    std::istringstream line(buffer);
    std::string name;
    if (line >> name) names.push_back(name);
  }
  pclose(pipe);
  return names;
}

std::string Joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

TEST(SchemeUnits, NoSchemeIsNamedOutsideItsUnitAndTheRegistry) {
  const std::vector<std::string> schemes = RegisteredSchemes();
  ASSERT_GE(schemes.size(), 9u) << "meshplan plan --list-schemes listed too few schemes";
  const std::vector<std::string> violations =
      CheckSchemeUnits(MESHPLAN_SOURCE_DIR, DomainOptions(schemes));
  EXPECT_TRUE(violations.empty()) << Joined(violations);
}

class SchemeUnitsFakeTree : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("meshplan_scheme_units_" + std::to_string(getpid()));
    fs::remove_all(root_);
    Write("planner/schemes/registry.cc",
          "NewLoongTrainStrategy, NewMeshStrategy, NewRingStrategy\n");
    Write("planner/schemes/loongtrain.cc", "constexpr std::string_view kName = \"loongtrain\";\n");
    Write("planner/schemes/mesh.cc", "constexpr std::string_view kName = \"mesh\";\n");
    Write("planner/schemes/attention2d_o.cc", "// ATTENTION2D's tile, overlapped\n");
    Write("report/plot.cc",
          "// a ring pass and the mesh tile family; GpuSpec is no scheme\n"
          "j.Key(\"ring\");  // the ring degree, a parameter key\n");
    Write("tools/plan_command.cc", "#include \"planner/plan_file.h\"\n");
  }
  void TearDown() override { fs::remove_all(root_); }
  void Write(const std::string& rel, const std::string& text) {
    fs::create_directories((root_ / rel).parent_path());
    std::ofstream(root_ / rel) << text;
  }
  std::vector<std::string> Check() const {
    return CheckSchemeUnits(
        root_, DomainOptions({"ring", "loongtrain", "mesh", "attention2d", "attention2d-o"}));
  }
  fs::path root_;
};

TEST_F(SchemeUnitsFakeTree, ACleanTreePasses) { EXPECT_TRUE(Check().empty()) << Joined(Check()); }

TEST_F(SchemeUnitsFakeTree, ADistinctiveNameOutsideItsUnitFailsInAnySpelling) {
  Write("simulator/replay.cc", "// the double ring of LoongTrain\n");
  Write("executor/engine.cc", "auto s = NewLoongTrainStrategy();\n");
  Write("planner/other.cc", "// ATTENTION2D_O's rows\n");
  const std::string v = Joined(Check());
  // "ATTENTION2D_O" is both names: attention2d-o, and attention2d followed by a separator.
  EXPECT_EQ(std::count(v.begin(), v.end(), '\n'), 4) << v;
  EXPECT_NE(v.find("executor/engine.cc:1: names the scheme 'loongtrain'"), std::string::npos) << v;
  EXPECT_NE(v.find("planner/other.cc:1: names the scheme 'attention2d-o'"), std::string::npos) << v;
  EXPECT_NE(v.find("planner/other.cc:1: names the scheme 'attention2d'"), std::string::npos) << v;
  EXPECT_NE(v.find("simulator/replay.cc:1: names the scheme 'loongtrain'"), std::string::npos) << v;
}

TEST_F(SchemeUnitsFakeTree, ACommonWordNameFailsOnlyAsALiteral) {
  Write("report/capacity/charts.cc", "if (name == \"mesh\") colour = 1;\n");
  const std::vector<std::string> v = Check();
  ASSERT_EQ(v.size(), 1u) << Joined(v);
  EXPECT_NE(v[0].find("report/capacity/charts.cc:1: has the scheme name \"mesh\" as a literal"),
            std::string::npos)
      << v[0];
}

TEST_F(SchemeUnitsFakeTree, ACopyOfTheListFails) {
  Write("tools/validate.sh", "for s in ring mesh loongtrain; do\n");
  const std::vector<std::string> v = Check();
  // loongtrain is named (rule 1) and three schemes are listed (rule 3).
  ASSERT_EQ(v.size(), 2u) << Joined(v);
  EXPECT_NE(v[1].find("tools/validate.sh:1: lists 3 schemes"), std::string::npos) << v[1];
}

TEST_F(SchemeUnitsFakeTree, OnlyToolsIncludeThePlanFileReader) {
  Write("simulator/plan_simulation.cc", "#include \"planner/plan_file.h\"\n");
  const std::vector<std::string> v = Check();
  ASSERT_EQ(v.size(), 1u) << Joined(v);
  EXPECT_NE(v[0].find("simulator/plan_simulation.cc:1: includes the plan-file reader"),
            std::string::npos)
      << v[0];
}

}  // namespace
}  // namespace meshplan::scheme_units
