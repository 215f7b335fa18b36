// The list syntax of a sweep's axes (docs/capacity-planning.md, List syntax): GPU counts and
// sequence lengths as comma lists and ranges, schemes as lists of names.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/plan/plan.h"

namespace meshplan::capacity {

// A list expands to at most this many values ("1..1G:+1" is a typo, not a sweep).
inline constexpr size_t kMaxListValues = 100000;

// Parses a list of counts: comma-separated items, each a count ("8", "128K", "2^20") or a range
// "LO..HI" (doubling from LO while <= HI), "LO..HI:+STEP" (arithmetic) or "LO..HI:*F" (factor F).
// Duplicates are dropped (first occurrence kept). Errors are one line starting with `what` (the
// flag or file key) and naming the item; an empty list is an error.
Result<std::vector<int64_t>> ParseCountList(const std::string& text, const std::string& what);

// Parses scheme names (planner::ParseScheme), dropping duplicates. Errors start with `what`; an
// empty list is an error.
Result<std::vector<Scheme>> ParseSchemeList(const std::vector<std::string>& names,
                                            const std::string& what);

}  // namespace meshplan::capacity
