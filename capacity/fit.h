// "What fits" questions for capacity planning: the longest sequence each scheme holds in memory
// on a cluster, and the smallest cluster that meets a step-time budget (docs/capacity-planning.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/cluster/topology.h"
#include "core/plan/plan.h"
#include "core/workload/workload.h"
#include "planner/plan_request.h"

namespace meshplan::capacity {

// Sequence lengths `fit` tries on P GPUs are the multiples of 2 * P: every layout of every scheme
// cuts the sequence into pieces x sub-shards that divide 2P (zigzag: 2 chunks per shard), so each
// candidate is a valid length for every scheme and only memory decides.
int64_t FitGranularity(int64_t num_gpus);

struct LongestFit {
  Scheme scheme;
  bool found = false;  // some multiple of granularity fits
  std::string reason;  // when !found: no valid plan, or too big even at the granularity
  int64_t granularity = 0;
  int64_t seq_len = 0;    // longest fitting multiple of granularity (<= the max_seq given)
  bool at_limit = false;  // the next multiple would exceed max_seq (the true limit may be higher)
  SchemeParams params;    // the fastest fitting plan at seq_len
  double peak_memory_bytes = 0;
  double time_s = 0;
};

// For each scheme, the longest sequence (a multiple of FitGranularity(P), at most max_seq) for
// which the scheme has a valid plan that fits in memory with reserved_bytes held back. The
// workload's own seq_len is ignored; a document mask (which fixes the length) is an error.
// Binary search: relies on the peak memory of every plan growing with the sequence length.
Result<std::vector<LongestFit>> LongestFittingSequence(const Topology& topology,
                                                       const Workload& base,
                                                       const std::vector<Scheme>& schemes,
                                                       double reserved_bytes, int64_t max_seq);
// The same for a whole planning request (its model, degrees and framework; its seq_len and
// rounding are not used): lengths are multiples of FitGranularity of the CP group's GPUs.
Result<std::vector<LongestFit>> LongestFittingSequence(const planner::PlanRequest& request,
                                                       int64_t max_seq);

struct SmallestCluster {
  int64_t gpus = 0;
  std::string topology;  // the scaled topology's name
  SchemeParams params;   // the fastest fitting plan at that size
  double time_s = 0;
  double peak_memory_bytes = 0;
  int64_t sizes_tried = 0;
};

// Bounds on SmallestClusterFor's search, which plans every cluster size in turn.
struct FitSearchLimits {
  int64_t max_sizes = 4096;  // cluster sizes it may try; more is refused before any is tried
  double max_seconds = 300;  // wall-clock time; past it the search stops with an error
};

// The smallest GPU count (multiples of the topology's inner span, e.g. whole nodes, tried in
// increasing order up to max_gpus) whose fastest fitting plan among `schemes` (empty: all) has
// an estimated time <= budget_s. Error when none does, naming the best time reached and where.
// A budget that is not a positive finite number, max_gpus above kMaxTopologyGpus or more than
// limits.max_sizes sizes to try is an error before any planning; a search running longer than
// limits.max_seconds stops with an error saying how far it got.
Result<SmallestCluster> SmallestClusterFor(const Topology& topology, const Workload& w,
                                           double budget_s, const std::vector<Scheme>& schemes,
                                           double reserved_bytes, int64_t max_gpus,
                                           const FitSearchLimits& limits = {});
// The same for a whole planning request, each size its topology scaled; with a model, a plan's
// time per layer is the time of all its layers over their count (budget_s stays per layer).
Result<SmallestCluster> SmallestClusterFor(const planner::PlanRequest& request, double budget_s,
                                           int64_t max_gpus, const FitSearchLimits& limits = {});

}  // namespace meshplan::capacity
