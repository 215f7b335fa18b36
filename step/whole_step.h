// One whole-training-step question and its answer: the model, the job's cluster and degrees in,
// the context-parallel plan for its attention layers (the planner's search, holding back the
// rest of the model's memory), the step's memory, time and the figures frameworks report out.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/cluster/topology.h"
#include "core/workload/model_config.h"
#include "planner/plan_request.h"
#include "step/step_memory.h"
#include "step/step_options.h"
#include "step/step_time.h"

namespace meshplan::step {

struct StepRequest {
  Topology cluster;  // the job's GPUs: options.gpus() of them
  ModelConfig model;
  int64_t seq = 0;  // tokens per sequence
  StepOptions options;
  // Try none, then full recompute, keeping the first that fits (options.recompute is ignored).
  bool recompute_auto = false;
  planner::Framework framework = planner::Framework::kAny;
  planner::SearchOptions search;  // the CP schemes to consider (empty: all)
};

struct StepAnswer {
  StepOptions options;  // as run (the recompute chosen under recompute_auto)
  std::unique_ptr<planner::PlanAnswer> attention;  // the CP plans of the attention layers
  const planner::Estimate* plan = nullptr;         // the chosen one (attention->result.ranked[0])
  AttentionSeconds attention_s;
  StepMemory memory;
  double memory_capacity_bytes = 0;
  bool fits = false;
  StepTime time;
  double model_flops = 0;  // per step, as Megatron counts them (ModelFlops)
  double step_s() const { return time.step_s(); }
  double tokens_per_s_per_gpu = 0;
  double model_tflops_per_gpu = 0;
  // The GPU's step_kernel_rate_fraction the kernels were timed at (GpuSpec).
  double step_kernel_rate_fraction = 1.0;
  // With a framework: the settings that launch the step as timed (Megatron: its whole command
  // line's parallel, batch, recompute and FP8 flags; others: the plan's CP settings). "" without.
  std::string framework_settings;
  // Why a recompute choice was passed over, and what the step leaves out ("" lines omitted).
  std::vector<std::string> notes;
};

// What every step question needs whatever its degrees: a dense model with the whole step's fields
// (ModelConfig::RequireWholeModel) and a GEMM rate for `gemm_dtype` on the cluster's GPU (the
// error names the file and gpu.gemm_efficiency).
Status RequireStepInputs(const ModelConfig& model, const Topology& cluster, DType gemm_dtype);

// The chosen attention plan as reports name it: "ring zigzag", "usp U=2 R=4 zigzag ...".
std::string AttentionPlanText(const planner::Estimate& plan);

// Errors name the flag or file: a model without the whole step's fields or with experts, degrees
// whose product is not the cluster's GPUs, layers PP (x VPP) cannot split (SplitLayers), a GPU file
// without a GEMM rate for the dtype, and the planner's (heads TP cannot divide, no valid plan).
Result<StepAnswer> AnswerStep(const StepRequest& request);

}  // namespace meshplan::step
