#include "capacity/fit.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>

#include "capacity/scale_topology.h"
#include "core/base/units.h"
#include "planner/context.h"
#include "planner/plan_request.h"
#include "planner/schemes/registry.h"
#include "planner/search.h"

namespace meshplan::capacity {
namespace {

// The outcome of planning one scheme at one sequence length.
struct Probe {
  bool valid = false;  // the scheme has a valid plan
  std::string reason;  // when !valid
  bool fits = false;   // its best plan fits (ranked is fits-first, so any plan fitting means this)
  planner::Estimate best;  // when valid
};

Probe PlanAt(const planner::PlanRequest& base, Scheme scheme, int64_t seq_len) {
  planner::PlanRequest request = base;
  request.search.schemes = {scheme};
  Probe probe;
  if (Status st = SetSequenceLength(request.workload, seq_len); !st.ok()) {
    probe.reason = st.message();
    return probe;
  }
  auto answer = planner::AnswerPlanRequest(request);
  if (!answer.ok()) {
    probe.reason = answer.status().message();
    return probe;
  }
  const planner::Estimate* best = (*answer)->BestOf(scheme);
  if (best == nullptr) {
    probe.reason = (*answer)->WhyNone(scheme);
    return probe;
  }
  probe.valid = true;
  probe.best = *best;
  probe.fits = probe.best.fits;
  return probe;
}

// An estimate's time per attention layer: with a model, all its layers' time shared evenly.
double PerLayerSeconds(const planner::PlanRequest& request, const planner::Estimate& e) {
  if (!request.model || request.model->layers <= 0 || e.model_layers_s < 0) return e.time_s;
  return e.model_layers_s / static_cast<double>(request.model->layers);
}

}  // namespace

int64_t FitGranularity(int64_t num_gpus) { return 2 * num_gpus; }

Result<std::vector<LongestFit>> LongestFittingSequence(const Topology& topology,
                                                       const Workload& base,
                                                       const std::vector<Scheme>& schemes,
                                                       double reserved_bytes, int64_t max_seq) {
  planner::PlanRequest request;
  request.topology = topology;
  request.workload = base;
  request.search.schemes = schemes;
  request.reserved_bytes = reserved_bytes;
  return LongestFittingSequence(request, max_seq);
}

Result<std::vector<LongestFit>> LongestFittingSequence(const planner::PlanRequest& asked,
                                                       int64_t max_seq) {
  const Workload& base = asked.workload;
  const std::vector<Scheme>& schemes = asked.search.schemes;
  const double reserved_bytes = asked.reserved_bytes;
  // Every candidate is a multiple of 2 x the CP group's GPUs: rounding would change none.
  planner::PlanRequest request = asked;
  request.seq_rounding = planner::SeqRounding::kAsGiven;
  if (base.mask.IsDocuments() && !base.mask.sampler) {
    return Status::Invalid(
        "fit: a document mask read from a file fixes the sequence length; use docs-sampled:SPEC "
        "(documents drawn for each length), causal, full, window or prefix");
  }
  MESHPLAN_ASSIGN_OR_RETURN(planner::PreparedRequest prepared, planner::PrepareRequest(request));
  const Topology& topology = prepared.cluster;
  const int64_t unit = FitGranularity(topology.num_gpus());
  const int64_t limit = std::min(max_seq, kMaxSeqLen);
  const int64_t k_max = limit / unit;
  if (k_max < 1) {
    return Status::Invalid("fit: the longest sequence to try (" + std::to_string(limit) +
                           ") is below the granularity of " + std::to_string(unit) +
                           " tokens (2 x " + std::to_string(topology.num_gpus()) + " GPUs)");
  }
  {
    Workload w = base;
    Status st = SetSequenceLength(w, unit);
    if (st.ok()) st = w.Validate();
    if (!st.ok()) return st.WithContext("workload");
  }
  std::vector<Scheme> list = schemes;
  if (list.empty()) list.assign(planner::AllSchemes().begin(), planner::AllSchemes().end());

  std::vector<LongestFit> out;
  for (Scheme scheme : list) {
    LongestFit fit;
    fit.scheme = scheme;
    fit.granularity = unit;
    Probe low = PlanAt(request, scheme, unit);
    if (!low.valid) {
      fit.reason = low.reason;
      out.push_back(std::move(fit));
      continue;
    }
    if (!low.fits) {
      fit.reason = "does not fit even at " + FormatCount(unit) + " tokens (peak " +
                   FormatBytes(low.best.peak_memory_bytes) + " + reserved " +
                   FormatBytes(reserved_bytes) + " > " +
                   FormatBytes(topology.gpu.MemoryPerRankBytes()) + ")";
      out.push_back(std::move(fit));
      continue;
    }
    // Monotonicity: every shard, buffer and cache a plan holds is a fixed multiple of S/P, so each
    // plan's peak memory grows with S, and so does the smallest peak over the scheme's plans. The
    // set of S where some plan fits is therefore a prefix of the candidates, and binary search
    // finds its end. (Validity does not depend on S here: every candidate divides evenly.)
    int64_t good = 1, bad = k_max + 1;  // fits(good); bad is past the end or does not fit
    Probe best = std::move(low);
    while (bad - good > 1) {
      const int64_t mid = good + (bad - good) / 2;
      Probe probe = PlanAt(request, scheme, mid * unit);
      if (probe.valid && probe.fits) {
        good = mid;
        best = std::move(probe);
      } else {
        bad = mid;
      }
    }
    fit.found = true;
    fit.seq_len = good * unit;
    fit.at_limit = good == k_max;
    fit.params = best.best.params;
    fit.peak_memory_bytes = best.best.peak_memory_bytes;
    fit.time_s = best.best.time_s;
    out.push_back(std::move(fit));
  }
  return out;
}

Result<SmallestCluster> SmallestClusterFor(const Topology& topology, const Workload& w,
                                           double budget_s, const std::vector<Scheme>& schemes,
                                           double reserved_bytes, int64_t max_gpus,
                                           const FitSearchLimits& limits) {
  planner::PlanRequest request;
  request.topology = topology;
  request.workload = w;
  request.search.schemes = schemes;
  request.reserved_bytes = reserved_bytes;
  return SmallestClusterFor(request, budget_s, max_gpus, limits);
}

Result<SmallestCluster> SmallestClusterFor(const planner::PlanRequest& request, double budget_s,
                                           int64_t max_gpus, const FitSearchLimits& limits) {
  const Topology& topology = request.topology;
  const Workload& w = request.workload;
  if (!(budget_s > 0) || !std::isfinite(budget_s)) {
    return Status::Invalid("fit: the time budget must be positive and finite (seconds)");
  }
  if (max_gpus > kMaxTopologyGpus) {
    return Status::Invalid("fit: --max-gpus " + std::to_string(max_gpus) + " is more than the " +
                           std::to_string(kMaxTopologyGpus) + " GPUs a topology may have");
  }
  if (topology.levels.empty())
    return Status::Invalid(topology.name + ": topology has no network level");
  MESHPLAN_RETURN_IF_ERROR(w.Validate().WithContext("workload"));
  MESHPLAN_RETURN_IF_ERROR(topology.SupportsDType(w.dtype));
  const int outer = topology.num_levels() - 1;
  const int64_t step = outer > 0 ? topology.Span(outer - 1) : 1;
  if (max_gpus < step) {
    return Status::Invalid("fit: --max-gpus " + std::to_string(max_gpus) + " is below the " +
                           std::to_string(step) + " GPUs of one group of " + topology.name);
  }
  const int64_t sizes = max_gpus / step;
  if (sizes > limits.max_sizes) {
    return Status::Invalid("fit: --max-gpus " + std::to_string(max_gpus) + " means " +
                           std::to_string(sizes) + " cluster sizes of " + std::to_string(step) +
                           " GPUs to try, more than the " + std::to_string(limits.max_sizes) +
                           " one search tries; lower --max-gpus");
  }
  std::optional<SmallestCluster> fastest;
  Status unanswered;  // the last size's error, when some size could not be planned  // the fastest
                      // fitting plan seen, for the error
  int64_t tried = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int64_t gpus = step; gpus <= max_gpus; gpus += step) {
    const double elapsed_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (tried > 0 && elapsed_s > limits.max_seconds) {
      return Status::Invalid("fit: stopped after " + FormatSeconds(elapsed_s) + " (the limit is " +
                             FormatSeconds(limits.max_seconds) + "), having tried " +
                             std::to_string(tried) + " cluster sizes up to " +
                             std::to_string(gpus - step) +
                             " GPUs without meeting the budget; lower --max-gpus");
    }
    planner::PlanRequest sized = request;
    MESHPLAN_ASSIGN_OR_RETURN(sized.topology, ScaleTopology(topology, gpus));
    ++tried;
    // A size the request cannot be answered at (e.g. one TP does not divide) is not a candidate.
    auto answer = planner::AnswerPlanRequest(sized);
    if (!answer.ok()) {
      unanswered = answer.status().WithContext(std::to_string(gpus) + " GPUs");
      continue;
    }
    const planner::SearchResult& result = (*answer)->result;
    if (result.ranked.empty() || !result.ranked.front().fits) continue;
    const planner::Estimate& best = result.ranked.front();
    SmallestCluster found;
    found.gpus = gpus;
    found.topology = sized.topology.name;
    found.params = best.params;
    found.time_s = PerLayerSeconds(request, best);
    found.peak_memory_bytes = best.peak_memory_bytes;
    found.sizes_tried = tried;
    if (found.time_s <= budget_s) return found;
    if (!fastest || best.time_s < fastest->time_s) fastest = std::move(found);
  }
  std::string message = "fit: no cluster of up to " + std::to_string(max_gpus) + " GPUs runs " +
                        w.Describe() + " within " + FormatSeconds(budget_s) +
                        " per attention layer";
  if (fastest) {
    message += ": the fastest fitting plan takes " + FormatSeconds(fastest->time_s) + " (" +
               std::string(SchemeName(fastest->params.scheme)) + " " +
               planner::DescribeParams(fastest->params) + " on " + std::to_string(fastest->gpus) +
               " GPUs)";
  } else {
    message += ": no plan fits in memory at any of those sizes";
    if (!unanswered.ok()) message += " (" + unanswered.message() + ")";
  }
  return Status::Invalid(message);
}

}  // namespace meshplan::capacity
