// The whole configuration of a job searched (issue 47 item 7): every TP x CP x DP x PP split of
// its GPUs that the model and batch allow, each with the recompute that fits (none, else full)
// and the best context-parallel plan inside, ranked by step time among those that fit.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "step/whole_step.h"

namespace meshplan::step {

// The degrees a search leaves free (0) or holds (the value given).
struct FixedDegrees {
  int64_t tp = 0, cp = 0, dp = 0, pp = 0;
};

// One configuration of the search and its answer.
struct SearchedStep {
  StepOptions options;
  double step_s = 0;
  double model_tflops_per_gpu = 0;
  bool fits = false;
  double memory_bytes = 0;
  std::string plan;  // the attention plan: scheme and parameters
};

struct StepSearch {
  std::vector<SearchedStep> ranked;  // fitting first, then by step time
  int64_t candidates = 0;            // configurations the degrees allow
  int64_t evaluated = 0;             // planned (the others: bounded out or too large to fit)
};

// The configurations of request.cluster's GPUs: TP a power of two dividing a node (the innermost
// level's group) and the heads and KV heads; PP any split of the layers Megatron takes
// (SplitLayers); CP with the sequence a multiple of 2 x CP (CP 1 always); DP the rest, dividing
// global batch / micro batch. Each is answered with recompute auto (AnswerStep), except those whose
// memory under full recompute, without attention's own, exceeds the GPU, and those whose step
// cannot beat the best found: a configuration's lower bound is its step with attention at half the
// fastest kernel rate the GPU file states (and no data-parallel tail), and configurations are
// answered in order of that bound. REQUIRES: request.options.global_batch > 0 (the same sequences
// for every configuration). Errors: no global batch, and AnswerStep's for the model and cluster
// (not per configuration: a configuration the planner refuses is left out).
Result<StepSearch> SearchStepConfigs(const StepRequest& request, const FixedDegrees& fixed);

// Each framework's best configuration (Megatron, yunchang, InternEvo) beside the best over every
// plan, and why each framework cannot run the latter's attention plan ("" when it can, or when its
// own best is as fast).
struct FrameworkBest {
  planner::Framework framework;
  std::optional<SearchedStep> best;  // nullopt: no configuration it runs
  std::string why_not_overall;       // why it cannot run the overall best's plan
};
struct FrameworkComparison {
  SearchedStep overall;  // the search over every plan (Framework::kAny)
  std::vector<FrameworkBest> frameworks;
};
// Errors: SearchStepConfigs's for the overall search.
Result<FrameworkComparison> CompareFrameworks(const StepRequest& request,
                                              const FixedDegrees& fixed);

}  // namespace meshplan::step
