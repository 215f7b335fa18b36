// One planning question and its answer, for every command that plans (plan, sweep, fit, bench):
// the cluster, the workload or model, the parallel degrees beside context parallelism, the
// framework, the sequence rounding and the search options in, the ranked plans with their
// per-layer-kind and all-layer times, the framework's choice and the notes out. Commands parse
// flags into a PlanRequest and print a PlanAnswer; the pipeline between lives here alone, so a
// planning option means the same in every command (docs/architecture.md, "The planning request").
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/base/status.h"
#include "core/cluster/topology.h"
#include "core/workload/model_config.h"
#include "core/workload/parallel_degrees.h"
#include "core/workload/workload.h"
#include "planner/context.h"
#include "planner/frameworks.h"
#include "planner/model_layers.h"
#include "planner/plan_timer.h"
#include "planner/search.h"

namespace meshplan::planner {

// --seq-round: the sequence as given, or rounded up or down to a multiple of 2 chunks per GPU of
// the context-parallel group (every layout's unit without sub-shards).
enum class SeqRounding { kAsGiven, kUp, kDown };
// "" -> kAsGiven, "up", "down"; anything else is an error naming --seq-round.
Result<SeqRounding> ParseSeqRounding(std::string_view text);

struct PlanRequest {
  Topology topology;  // the whole cluster (model flags applied); degrees take a CP group's share
  Workload workload;  // as asked: the whole model's heads, the sequence before rounding
  std::optional<ModelConfig> model;  // its layer kinds: global and sliding-window layers
  ParallelDegrees degrees;           // TP and DP beside context parallelism
  Framework framework = Framework::kAny;
  // TransformerEngine's rings send partials in the workload's dtype: with Framework::kMegatron the
  // partial dtype becomes the workload's unless it was given (docs/frameworks.md).
  bool partial_dtype_given = false;
  // TransformerEngine prefers cuDNN's fused attention on Hopper: with Framework::kMegatron the
  // cluster's cudnn curve times the kernels unless --attention-kernel was given.
  bool attention_kernel_given = false;
  SeqRounding seq_rounding = SeqRounding::kAsGiven;
  double reserved_bytes = 0;  // GPU memory held back for weights, optimizer state, activations
  SearchOptions search;       // the schemes to consider (empty: all)
};

// What the plans of a request run on: one context-parallel group's cluster and the workload each
// of its GPUs sees (heads divided by TP, the sequence rounded, the framework's partial dtype; a
// model whose every layer slides is planned under its window), with the model's layer kinds.
struct PreparedRequest {
  Topology cluster;
  Workload workload;
  std::optional<ModelConfig> model;  // the request's
  ModelWorkloads layers;    // layers.window: the sliding layers' workload when there are both kinds
  ParallelDegrees degrees;  // the request's
  Framework framework = Framework::kAny;
  std::string rounding_note;   // "--seq N rounded up to M (...)" or ""
  std::string framework_note;  // what the framework changed in the workload or cluster, or ""

  // The job the framework's settings are for: this CP group, the degrees, the model's layers.
  FrameworkJob Job() const;
};
// Errors: degrees the cluster or the heads cannot take (naming --tp/--dp), a bad rounding, a
// sliding model under a mask other than causal, a dtype the cluster's GPUs do not support.
Result<PreparedRequest> PrepareRequest(const PlanRequest& request);

// A scheme whose every valid plan the framework does not run, and why: the first plan's reason
// that another plan of the scheme would not change (FrameworkRun::variant), else the first.
struct FrameworkRefusal {
  Scheme scheme;
  std::string why;
  bool variant = false;
};

// The answer: the prepared request, its contexts and the ranking. Holds the contexts' workloads
// and cluster, so it is neither copied nor moved (AnswerPlanRequest hands out a unique_ptr).
struct PlanAnswer {
  explicit PlanAnswer(PreparedRequest prepared_request, double reserved_bytes);
  PlanAnswer(const PlanAnswer&) = delete;
  PlanAnswer& operator=(const PlanAnswer&) = delete;

  PreparedRequest prepared;
  PlanContext ctx;                          // the plans' own (global layers') context
  std::unique_ptr<PlanContext> window_ctx;  // the sliding layers', with both kinds of layer
  // Ranked plans the framework runs (fits first, then time; with a model, the time of all its
  // layers: Estimate::model_layers_s), and the schemes with no valid plan.
  SearchResult result;
  size_t valid_any = 0;                         // valid plans before the framework's filter
  std::optional<Estimate> best_any;             // with a framework: the best fitting plan of any
  std::vector<FrameworkRefusal> framework_out;  // schemes the framework runs no plan of

  const Workload& workload() const { return prepared.workload; }
  const Topology& cluster() const { return prepared.cluster; }
  // Whether the framework runs `plan` on the whole model (global and sliding-window layers, the
  // latter's plan Estimate::window_params), and its settings.
  FrameworkRun FrameworkRunOf(const Estimate& plan) const;
  // The best ranked plan of `scheme` (fits first, then time), or nullptr.
  const Estimate* BestOf(Scheme scheme) const;
  // Why `scheme` has no ranked plan: the framework's reason, the search's, or "no valid plan".
  std::string WhyNone(Scheme scheme) const;
  // The error for an answer without any ranked plan: the framework runs none of the valid plans
  // (its reasons per scheme), or no scheme has a valid plan (the reasons, each said once).
  Status NoPlanError() const;
};

// Replays of the top plans by a better timer (plan --simulate), after the framework's filter and
// before the model's layers are timed. `before_replay` sees the answer after the filter, before
// any replay (a command checks its plan-number flags there, so that a bad one does not wait for
// the replays, and prints the notes); its error ends the answer.
struct ReplayOptions {
  PlanTimer* timer = nullptr;  // nullptr: no replays
  int top = 0;                 // plans replayed and re-ranked
  std::function<Status(const PlanAnswer& filtered)> before_replay;
};

// The whole pipeline: PrepareRequest, the search, the framework's filter, the replays, the
// model's layers. Errors: PrepareRequest's, the timer's; an answer with no ranked plan is not an
// error here (a sweep reports it per scheme; PlanAnswer::NoPlanError says it for one question).
Result<std::unique_ptr<PlanAnswer>> AnswerPlanRequest(const PlanRequest& request,
                                                      const ReplayOptions& replay = {});

}  // namespace meshplan::planner
