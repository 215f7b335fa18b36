// The layering of meshplan's source tree, as a rule table that tests/meta/layering_test.cc
// checks the real tree against (and tests/meta/layering_check_test.cc breaks on purpose).
//
// Dependencies point down this ladder; a part may include (and link) only parts below it:
//
//   tools                                  the CLI: flags and printing
//     report                               renders: tables, JSON/CSV, SVG charts
//       capacity                           drives the planner/simulator over grids (sweep, fit)
//         simulator    executor            side by side: neither includes the other
//           planner                        strategies, schedules, search
//             core                         types, formats, units
//
// executor/cuda/ belongs to executor. tests/ and bench/ may include anything. Besides includes,
// each part's CMakeLists.txt must link exactly what its includes call for (layering_check.h).
#pragma once

#include "tests/meta/layering_check.h"

namespace meshplan::layering {

inline Rules MeshplanRules() {
  Rules rules;
  rules.parts = {
      {"core", {}},
      {"planner", {"core"}},
      {"simulator", {"core", "planner"}},
      {"executor", {"core", "planner"}},
      {"capacity", {"core", "planner", "simulator", "executor"}},
      {"report", {"core", "planner", "simulator", "executor", "capacity"}},
      {"tools", {"core", "planner", "simulator", "executor", "capacity", "report"}},
  };
  rules.free_dirs = {"tests", "bench"};
  return rules;
}

}  // namespace meshplan::layering
