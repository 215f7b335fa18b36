// Rendering of `meshplan fit` answers (capacity/fit.h) as a table or JSON
// (docs/capacity-planning.md, meshplan fit).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "capacity/fit.h"
#include "core/topology.h"
#include "core/workload.h"

namespace meshplan::report {

// The longest fitting sequence per scheme, found on `topology` for `workload` (its sequence
// length ignored) with `reserved_bytes` held back per GPU and `max_seq` the longest length tried.
// The table lists the schemes that fit, then those that do not with the reason.
std::string LongestFitTable(const Topology& topology, const Workload& workload,
                            double reserved_bytes, int64_t max_seq,
                            const std::vector<capacity::LongestFit>& fits);
// The same as one JSON object (and a newline).
std::string LongestFitJson(const Topology& topology, const Workload& workload,
                           double reserved_bytes, int64_t max_seq,
                           const std::vector<capacity::LongestFit>& fits);

// The smallest cluster that runs `workload` within `budget_s` per step.
std::string SmallestClusterTable(const Workload& workload, double reserved_bytes, double budget_s,
                                 const capacity::SmallestCluster& found);
// The same as one JSON object (and a newline).
std::string SmallestClusterJson(const Workload& workload, double budget_s,
                                const capacity::SmallestCluster& found);

}  // namespace meshplan::report
