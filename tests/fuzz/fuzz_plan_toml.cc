// Plan files (planner/plan_file.h): any bytes give a plan or one error line; a plan that parses
// writes back to a file that parses again to the same text.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "planner/plan_file.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto plan = meshplan::planner::ParsePlanToml(text, "fuzz.toml");
  if (!plan.ok()) {
    meshplan::fuzz::CheckOneLine(plan.status());
    return 0;
  }
  const std::string written = meshplan::planner::PlanToToml(*plan, "");
  auto again = meshplan::planner::ParsePlanToml(written, "written.toml");
  meshplan::fuzz::Check(again.ok(), "a written plan does not parse again");
  meshplan::fuzz::Check(meshplan::planner::PlanToToml(*again, "") == written,
                        "a plan does not round-trip");
  return 0;
}
