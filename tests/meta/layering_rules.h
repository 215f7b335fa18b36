// The layering of meshplan's source tree, as a rule table that tests/meta/layering_test.cc
// checks the real tree against (and tests/meta/layering_check_test.cc breaks on purpose).
//
// Dependencies point down this ladder; a part may include (and link) only parts below it:
//
//   tools                                  the CLI: flags and printing
//     report                               renders: tables, JSON/CSV, SVG charts
//       capacity                           drives the planner/simulator over grids (sweep, fit)
//         simulator    executor    step    side by side: none includes another (step: the
//                                          whole training step around the CP plan)
//           planner                        strategies, schedules, search
//             core                         types, formats, units
//
// executor/cuda/ belongs to executor. tests/ and bench/ may include anything. Besides includes,
// each part's CMakeLists.txt must link exactly what its includes call for (layering_check.h).
//
// Inside executor/, the folders by concern have rules of their own (docs/architecture.md):
//
//   executor/*.h (entry points: execute, plan_run, gather, output check, host set-up)
//     cuda         the CUDA backend and its entry (cuda_execute)
//       calibration  measures the machine: the CPU kernels and thread transport, or the engine
//         device       the engine, its DeviceOps and host backend, its options and outputs
//           kernels      CPU block kernels, the float64 reference, the cuDNN piece split
//             io           host tensors, .npy files, run files, input sources
//           transport    point-to-point messages between ranks
//           timing       op timings, timelines, op classes, repeated runs
//
// The leaves include nothing else of executor/; the engine takes nothing from the entry points
// above it, and nothing below calibration includes it.
//
// core/ and report/ are folders by concern too, each folder naming the folders it may include:
//
//   core/plan (Plan, Schedule)       core/cost (kernel time, FLOPs)
//     core/workload (workload, model, TP/DP degrees)
//       core/sequence (masks, documents, layouts)   core/cluster (topology, its files)
//         core/base (status, units, dtype, files, text formats)
//
//   report/runs   report/capacity   report/plan   report/topology
//     report/format (text tables, CSV, workload JSON)   report/svg (drawing)
//
// Inside planner/, the scheme units sit above what they share (docs/architecture.md, "The
// planner: a scheme is one unit"):
//
//   planner/schemes   the scheme units, their shared helpers and the registry
//     planner/mesh      the Mesh tile's step table (greedy, step costs)
//       planner/patterns  the communication patterns several schemes share (ring pass, all-to-all)
//
// Each includes the planner's top-level files freely (a folder rule cannot hold those back:
// search.cc, plan_file.cc and plan_schedule.cc ask the registry), so that the registry and
// schemes/common.h stay out of everything below the units.
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
      {"step", {"core", "planner"}},
      {"capacity", {"core", "planner", "simulator", "executor", "step"}},
      {"report", {"core", "planner", "simulator", "executor", "capacity", "step"}},
      {"tools", {"core", "planner", "simulator", "executor", "capacity", "report", "step"}},
  };
  rules.free_dirs = {"tests", "bench"};
  rules.folders = {
      // core/ by concern: the base types and formats, masks and layouts of the sequence, the
      // cluster model and its files, the workload and model, the cost formulas, plans.
      {"core/base", {}},
      {"core/sequence", {"core/base"}},
      {"core/cluster", {"core/base"}},
      {"core/workload", {"core/base", "core/sequence", "core/cluster"}},
      {"core/cost", {"core/base", "core/sequence", "core/cluster", "core/workload"}},
      {"core/plan", {"core/base", "core/sequence", "core/workload"}},
      // report/ by concern: text and CSV building blocks and SVG drawing below what they render.
      {"report/format", {}},
      {"report/svg", {}},
      {"report/topology", {"report/format"}},
      {"report/plan", {"report/format"}},
      {"report/capacity", {"report/format", "report/svg"}},
      {"report/step", {"report/format"}},
      {"report/runs", {"report/format", "report/svg", "report/topology"}},
      {"executor/io", {}},
      {"executor/transport", {}},
      {"executor/timing", {}},
      {"executor/kernels", {"executor/io"}},
      {"executor/device",
       {"executor/io", "executor/kernels", "executor/transport", "executor/timing"}},
      {"executor/calibration",
       {"executor", "executor/device", "executor/kernels", "executor/transport", "executor/timing",
        "executor/io"}},
      {"executor/cuda",
       {"executor", "executor/device", "executor/kernels", "executor/transport", "executor/timing",
        "executor/io"}},
      {"planner/patterns", {"planner"}},
      {"planner/mesh", {"planner", "planner/patterns"}},
      {"planner/schemes", {"planner", "planner/mesh", "planner/patterns"}},
  };
  return rules;
}

}  // namespace meshplan::layering
