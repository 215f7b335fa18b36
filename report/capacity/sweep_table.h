// Sweep rows (capacity/sweep.h) as machine-readable tables: the output of `meshplan sweep`
// (docs/capacity-planning.md, Output).
#pragma once

#include <string>
#include <vector>

#include "capacity/sweep.h"

namespace meshplan::report {

// One CSV line per row under a header; numbers in their shortest exact form, empty fields where
// a row has no value (invalid rows: no numbers; unsimulated rows: no simulated_s).
std::string SweepCsv(const std::vector<capacity::SweepRow>& rows);
// {"rows": [...]} with the CSV's fields; invalid rows carry `reason` and no numbers.
std::string SweepJson(const std::vector<capacity::SweepRow>& rows);
// For people (`--format table`, the default on a terminal): aligned columns with units (time,
// exposed communication, its share, bytes per GPU, peak memory, fits, simulated; TP and all
// layers when any row has them); an invalid row shows "-" and, in a last column, its reason.
std::string SweepTextTable(const std::vector<capacity::SweepRow>& rows);

}  // namespace meshplan::report
