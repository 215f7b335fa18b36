// Rendering of `meshplan fit` answers (capacity/fit.h) as a table or JSON
// (docs/capacity-planning.md, meshplan fit).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "capacity/fit.h"
#include "core/cluster/topology.h"
#include "core/workload/workload.h"

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

// What `fit --budget-s` limits: one attention layer's pass, or with --model all the model's
// attention layers in one training step (the layers then share it evenly: per_layer_s).
struct TimeBudget {
  double seconds = 0;  // as given
  int64_t layers = 1;  // attention layers it covers
  std::string model;   // the model's name ("" without --model)
  double per_layer_s() const { return seconds / static_cast<double>(layers); }
  // "1 s for one attention layer (fwd+bwd)", or "40 s for the 80 attention layers of
  // llama-3.1-70b in one training step (fwd+bwd): 500 ms per layer".
  std::string Describe(Pass pass) const;
};

// The smallest cluster that runs `workload` within the budget (found.time_s: one layer's time).
std::string SmallestClusterTable(const Workload& workload, double reserved_bytes,
                                 const TimeBudget& budget, const capacity::SmallestCluster& found);
// The same as one JSON object (and a newline): budget_s (as given), budget_is (its words),
// per_layer_budget_s, time_s (one layer) and, with a model, all_layers_s.
std::string SmallestClusterJson(const Workload& workload, const TimeBudget& budget,
                                const capacity::SmallestCluster& found);

}  // namespace meshplan::report
