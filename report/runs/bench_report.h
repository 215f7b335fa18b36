// The rows of `meshplan bench` (capacity/bench.h) as a text table, CSV, JSON and SVG charts:
// TFLOP/s per rank and peak memory per rank for each scheme against sequence length, one chart
// each per mask, measured next to predicted (docs/benchmarks.md, "meshplan bench").
#pragma once

#include <string>
#include <vector>

#include "capacity/bench.h"
#include "core/base/status.h"
#include "report/svg/svg_plot.h"

namespace meshplan::report {

// What ran where, for the table's heading and the JSON.
struct BenchContext {
  std::string topology;  // the prediction's cluster (name)
  std::string run;       // "backend cpu, transport threads, 4 ranks", ...
  std::string workload;  // the base workload without its length and mask
  int repeat = 0;
  Workload base;  // its fields (the JSON's workload object; seq and mask not used)
};

// One block per mask: a row per (length, scheme) with the plan, predicted and measured time, the
// error, TFLOP/s per rank (measured, predicted), the spread of the timed runs, and peak memory
// per rank (measured engine peak, the planner's model) with the process's peak RSS; rows that did
// not run say why.
std::string RenderBenchTable(const std::vector<capacity::BenchRow>& rows,
                             const BenchContext& context);
// One line per row under a header; numbers in their shortest exact form, empty where none.
std::string BenchCsv(const std::vector<capacity::BenchRow>& rows);
// {"context": {...}, "rows": [...]} with the CSV's fields.
std::string BenchJson(const std::vector<capacity::BenchRow>& rows, const BenchContext& context);

// TFLOP/s per rank against sequence length (log2) under `mask`: per scheme a measured series and
// a predicted one ("<scheme> (predicted)"), rows that ran only.
plot::LineChart BenchTflopsChart(const std::vector<capacity::BenchRow>& rows,
                                 const std::string& mask);
// Peak memory per rank (MiB, log10) against sequence length: per scheme the measured engine peak
// and the planner's model ("<scheme> (model)").
plot::LineChart BenchMemoryChart(const std::vector<capacity::BenchRow>& rows,
                                 const std::string& mask);

// Writes into `dir` (created when missing), each file atomically, for every mask M in the rows
// (M with ':' and '/' replaced by '-'): tflops-M.svg and memory-M.svg. Errors: no rows that ran
// (invalid input); a directory or file that cannot be written (I/O, naming it).
Status WriteBenchCharts(const std::vector<capacity::BenchRow>& rows, const std::string& dir);

}  // namespace meshplan::report
