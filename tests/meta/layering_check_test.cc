// CheckLayering on fake trees in a temporary directory, with the real rule table: a tree that
// follows the rules passes, and breaking each rule once fails with a message naming the file.
// This is what shows that tests/meta/layering_test.cc can fail.
#include "tests/meta/layering_check.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/meta/layering_rules.h"

namespace meshplan::layering {
namespace {

namespace fs = std::filesystem;

// A small tree shaped like meshplan: one header per part including the part below it, and
// CMakeLists that link accordingly.
class FakeTree : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("meshplan_layering_test_" + std::to_string(getpid()));
    fs::remove_all(root_);
    Write("core/CMakeLists.txt", "add_library(meshplan_core types.cc)\n");
    Write("core/types.h", "#pragma once\n#include <string>\n");
    Write("planner/CMakeLists.txt",
          "add_library(meshplan_planner search.cc)\ntarget_link_libraries(meshplan_planner PUBLIC "
          "meshplan_core)\n");
    Write("planner/search.h", "#include \"core/types.h\"\n");
    Write("simulator/CMakeLists.txt",
          "add_library(meshplan_simulator simulate.cc)\n"
          "target_link_libraries(meshplan_simulator PUBLIC meshplan_planner)\n");
    Write("simulator/simulate.h",
          "#include \"planner/search.h\"\n#include \"simulator/other.h\"\n");
    Write("executor/CMakeLists.txt",
          "add_library(meshplan_executor execute.cc)\n"
          "target_link_libraries(meshplan_executor PUBLIC meshplan_planner Eigen3::Eigen)\n");
    Write("executor/execute.h",
          "#include \"core/types.h\"\n#include \"planner/plan_schedule.h\"\n");
    Write("executor/cuda/CMakeLists.txt",
          "add_library(meshplan_cuda cuda_execute.cc)\n"
          "target_link_libraries(meshplan_cuda PUBLIC meshplan_executor)\n");
    Write("executor/cuda/cuda_execute.h", "#include \"executor/execute.h\"\n");
    Write("capacity/CMakeLists.txt",
          "add_library(meshplan_capacity sweep.cc)\n"
          "target_link_libraries(meshplan_capacity PUBLIC meshplan_simulator)\n");
    Write("capacity/sweep.h", "#include \"simulator/simulate.h\"\n#include \"planner/search.h\"\n");
    Write("report/CMakeLists.txt",
          "add_library(meshplan_report charts.cc)\n"
          "target_link_libraries(meshplan_report PUBLIC meshplan_capacity)\n");
    Write("report/capacity/charts.h", "#include \"capacity/sweep.h\"\n");
    Write(
        "tools/CMakeLists.txt",
        "add_executable(meshplan main.cc)\n"
        "target_link_libraries(meshplan PRIVATE meshplan_report meshplan_executor CLI11::CLI11)\n");
    Write("tools/main.cc",
          "#include \"report/capacity/charts.h\"\n#include \"executor/cuda/cuda_execute.h\"\n");
    Write("tests/anything_test.cc", "#include \"tools/main.h\"\n#include \"executor/execute.h\"\n");
    Write("docs/notes.md", "#include \"tools/main.h\"\n");
  }
  void TearDown() override { fs::remove_all(root_); }

  void Write(const std::string& path, const std::string& text) {
    fs::create_directories((root_ / path).parent_path());
    std::ofstream(root_ / path) << text;
  }

  Report Check() { return CheckLayering(root_, MeshplanRules()); }

  // Expects a violation holding every one of `needles`.
  static void ExpectViolation(const Report& report, const std::vector<std::string>& needles) {
    for (const std::string& v : report.violations) {
      bool all = true;
      for (const std::string& needle : needles) all = all && v.find(needle) != std::string::npos;
      if (all) return;
    }
    std::string listed;
    for (const std::string& v : report.violations) listed += "\n  " + v;
    ADD_FAILURE() << "no violation names all of " << ::testing::PrintToString(needles)
                  << "; violations:" << listed;
  }

  fs::path root_;
};

TEST_F(FakeTree, ATreeThatFollowsTheRulesPasses) {
  const Report report = Check();
  EXPECT_TRUE(report.violations.empty()) << report.violations.front();
  EXPECT_NE(report.includes.find(
                "capacity/ includes: planner (capacity/sweep.h:2) simulator (capacity/sweep.h:1)"),
            std::string::npos)
      << report.includes;
}

TEST_F(FakeTree, IncludingAPartAboveFails) {
  Write("core/types.h", "#pragma once\n#include \"planner/search.h\"\n");
  ExpectViolation(Check(), {"core/types.h:2", "#include \"planner/search.h\"",
                            "core/ may include only nothing"});
  SetUp();
  Write("capacity/sweep.h", "#include \"report/capacity/charts.h\"\n");
  ExpectViolation(Check(), {"capacity/sweep.h:1", "report/capacity/charts.h"});
  SetUp();
  Write("report/capacity/charts.h", "#include \"capacity/sweep.h\"\n#include \"tools/main.h\"\n");
  ExpectViolation(Check(), {"report/capacity/charts.h:2", "tools/main.h"});
}

TEST_F(FakeTree, SimulatorAndExecutorMayNotIncludeEachOther) {
  Write("simulator/simulate.h", "#include \"planner/search.h\"\n#include \"executor/execute.h\"\n");
  ExpectViolation(Check(), {"simulator/simulate.h:2", "executor/execute.h"});
  SetUp();
  Write("executor/cuda/cuda_execute.h", "#include \"simulator/simulate.h\"\n");
  ExpectViolation(Check(), {"executor/cuda/cuda_execute.h:1", "simulator/simulate.h"});
}

TEST_F(FakeTree, LibrariesMayNotIncludeTestsOrBenchmarks) {
  Write("planner/search.h",
        "#include \"core/types.h\"\n#include \"tests/planner/test_cluster.h\"\n");
  ExpectViolation(Check(), {"planner/search.h:2", "tests/planner/test_cluster.h"});
}

TEST_F(FakeTree, LinkingWhatNoFileIncludesFails) {
  Write("planner/CMakeLists.txt",
        "add_library(meshplan_planner search.cc)\n"
        "target_link_libraries(meshplan_planner PUBLIC meshplan_core meshplan_simulator)\n");
  ExpectViolation(Check(),
                  {"planner/CMakeLists.txt", "links meshplan_simulator", "no file of planner/"});
}

TEST_F(FakeTree, AnExecutorThatLinksThePlannerWithoutIncludingItFails) {
  Write("executor/execute.h", "#include \"core/types.h\"\n");
  ExpectViolation(Check(),
                  {"executor/CMakeLists.txt", "links meshplan_planner", "no file of executor/"});
}

TEST_F(FakeTree, IncludingWhatIsNotLinkedFails) {
  Write("report/CMakeLists.txt", "add_library(meshplan_report charts.cc)\n");
  ExpectViolation(Check(), {"report/capacity/charts.h:1", "includes a capacity/ header",
                            "report/ links a library of capacity/"});
  // Reaching a part through another part's PUBLIC link is enough: capacity reaches planner
  // through the simulator (the baseline tree), but not once the simulator links nothing.
  SetUp();
  Write("simulator/CMakeLists.txt", "add_library(meshplan_simulator simulate.cc)\n");
  ExpectViolation(Check(), {"capacity/sweep.h:2", "includes a planner/ header"});
}

TEST_F(FakeTree, LinkingAnUndefinedLibraryFails) {
  Write("tools/CMakeLists.txt",
        "add_executable(meshplan main.cc)\n"
        "target_link_libraries(meshplan PRIVATE meshplan_report meshplan_executor meshplan_gui)\n");
  ExpectViolation(Check(), {"tools/CMakeLists.txt", "links meshplan_gui, which no part defines"});
}

TEST_F(FakeTree, ExecutorFoldersIncludeOnlyWhatTheirRuleAllows) {
  Write("executor/io/tensor.h", "#pragma once\n#include \"core/types.h\"\n");
  Write("executor/transport/transport.h", "#pragma once\n#include \"executor/io/tensor.h\"\n");
  ExpectViolation(Check(), {"executor/transport/transport.h:2", "executor/io/tensor.h",
                            "executor/transport/ may include of executor/ only nothing"});
  SetUp();
  Write("executor/kernels/block_kernels.h", "#include \"executor/device/device_engine.h\"\n");
  ExpectViolation(Check(),
                  {"executor/kernels/block_kernels.h:1", "executor/device/device_engine.h"});
  // The part's name stands for its top-level files only: the engine may not include an entry point.
  SetUp();
  Write("executor/device/device_engine.h", "#include \"executor/execute.h\"\n");
  ExpectViolation(Check(), {"executor/device/device_engine.h:1", "executor/execute.h"});
  // ... while the CUDA entry may (the baseline tree's executor/cuda/cuda_execute.h does).
  SetUp();
  Write("executor/extras/helper.h", "#pragma once\n");
  ExpectViolation(Check(), {"executor/extras/ holds C++ sources but has no folder rule"});
}

TEST_F(FakeTree, PlannerFoldersBelowTheSchemeUnitsMayNotIncludeThem) {
  Write("planner/schemes/registry.h", "#pragma once\n#include \"planner/search.h\"\n");
  Write("planner/patterns/ring_pass.h", "#pragma once\n#include \"planner/search.h\"\n");
  Write("planner/mesh/step_costs.h", "#include \"planner/patterns/ring_pass.h\"\n");
  EXPECT_TRUE(Check().violations.empty()) << Check().violations.front();
  Write("planner/patterns/ring_pass.cc", "#include \"planner/schemes/registry.h\"\n");
  ExpectViolation(Check(), {"planner/patterns/ring_pass.cc:1", "planner/schemes/registry.h",
                            "planner/patterns/ may include of planner/ only planner"});
  Write("planner/patterns/ring_pass.cc", "#include \"planner/mesh/step_costs.h\"\n");
  ExpectViolation(Check(), {"planner/patterns/ring_pass.cc:1", "planner/mesh/step_costs.h"});
  Write("planner/patterns/ring_pass.cc", "\n");
  Write("planner/mesh/step_costs.cc", "#include \"planner/schemes/registry.h\"\n");
  ExpectViolation(Check(), {"planner/mesh/step_costs.cc:1", "planner/schemes/registry.h"});
}

TEST_F(FakeTree, SourcesOutsideEveryPartFail) {
  Write("extras/helper.cc", "#include \"core/types.h\"\n");
  ExpectViolation(Check(), {"extras/ holds C++ sources but is no part of the layering rules"});
}

}  // namespace
}  // namespace meshplan::layering
