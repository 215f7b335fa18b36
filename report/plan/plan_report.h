// Rendering of `meshplan plan` results (the planner's search): ranked table, JSON, CSV and the
// [estimate] table of a plan file. Equivalent plans (planner/equivalence.h) are listed as one
// group unless every variant is asked for; formats are specified in docs/plan-output.md.
#pragma once

#include <functional>
#include <string>

#include "core/plan/schedule.h"
#include "core/workload/parallel_degrees.h"
#include "planner/context.h"
#include "planner/estimate.h"
#include "planner/frameworks.h"
#include "planner/search.h"

namespace meshplan::report {

// What --model, --tp and --dp add to a listing; each plan's time for all the model's layers is
// its Estimate::model_layers_s.
struct ModelView {
  std::string name;         // the model (shipped name or file)
  std::string description;  // ModelConfig::Describe()
  std::string source;
  int64_t layers = 0;  // attention layers in one training step (0: no model given)
  int64_t window_layers = 0;
  int64_t window = 0;
  int64_t q_heads = 0, kv_heads = 0;  // the model's, before TP divides them
  ParallelDegrees degrees;            // tp and dp (trivial: not given)
};

// What a listing shows.
struct PlanListing {
  int top = 20;                      // groups to list (plans with all_variants); 0: all
  bool all_variants = false;         // every plan on its own row, ungrouped
  bool wide = false;                 // table: also compute and imbalance, bytes with two decimals
  const ModelView* model = nullptr;  // --model / --tp / --dp, when given
  // --framework: the ranked plans are those it runs; each gets its settings, and the best plan
  // over every scheme (when faster than the framework's best) is named beside them.
  planner::Framework framework = planner::Framework::kAny;
  const planner::Estimate* best_any = nullptr;  // the best fitting plan over every scheme
  size_t valid_any = 0;                         // valid plans over every scheme
  std::string framework_note;                   // a line on what --framework changed, or ""
  // Whether the framework runs a plan on the whole job and with what settings
  // (planner::PlanAnswer::FrameworkRunOf); unset: planner::RunIn on the listing's CP group alone.
  std::function<planner::FrameworkRun(const planner::Estimate&)> framework_run;
};

// The plan whose breakdown `plan --explain N` adds to a JSON document.
struct ExplainedPlan {
  int plan_number = 0;                 // 1-based place in the full ranking
  const Schedule* schedule = nullptr;  // null: not expanded (large clusters)
};

// "256 x H100 SXM5 80GB (dgx-h100-32node: nvlink 8 x 450 GB/s, ib 32 x 50 GB/s)"
std::string ClusterLine(const planner::PlanContext& ctx);

// The listed groups (or plans) of the ranked list, then the rejected schemes with their reasons.
std::string PlanTable(const planner::PlanContext& ctx, const planner::SearchResult& result,
                      const PlanListing& listing);
// With `explain`, the document also holds that plan's breakdown under "explain".
std::string PlanJson(const planner::PlanContext& ctx, const planner::SearchResult& result,
                     const PlanListing& listing, const ExplainedPlan* explain = nullptr);
std::string PlanCsv(const planner::PlanContext& ctx, const planner::SearchResult& result,
                    const PlanListing& listing);

// The [estimate] table stored in a plan file (informational).
std::string EstimateToml(const planner::Estimate& estimate);

}  // namespace meshplan::report
