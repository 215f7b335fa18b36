#include "step/whole_step.h"

#include <cstdio>
#include <string>
#include <utility>

#include "core/base/units.h"
#include "core/cost/gemm_time.h"
#include "planner/evaluate_plan.h"
#include "planner/schemes/registry.h"
#include "planner/strategy.h"
#include "step/model_shapes.h"

namespace meshplan::step {
namespace {

Status CheckRequest(const StepRequest& r) {
  MESHPLAN_RETURN_IF_ERROR(RequireStepInputs(r.model, r.cluster, r.options.gemm_dtype));
  MESHPLAN_RETURN_IF_ERROR(ValidateStepOptions(r.options));
  const StepOptions& o = r.options;
  if (r.cluster.num_gpus() != o.gpus()) {
    return Status::Invalid("--gpus: TP x CP x DP x PP = " + std::to_string(o.gpus()) +
                           " GPUs, but the cluster has " + std::to_string(r.cluster.num_gpus()));
  }
  if (auto split = SplitLayers(r.model.layers, o.pp, o.vpp); !split.ok()) return split.status();
  if (r.seq < 1) return Status::Invalid("--seq: must be at least 1");
  return Status::Ok();
}

// The attention workload of one micro-batch: the model's heads, causal, forward and backward,
// in the model's dtype (bf16 when it states none; FP8 GEMMs leave attention in bf16).
Workload AttentionWorkload(const ModelConfig& m, const StepOptions& o) {
  Workload w;
  w.batch = o.micro_batch;
  w.q_heads = m.q_heads;
  w.kv_heads = m.kv_heads;
  w.head_dim = m.head_dim;
  w.dtype = m.dtype.value_or(DType::kBf16);
  w.mask = Mask::Causal();
  w.pass = Pass::kForwardBackward;
  return w;
}

// The chosen plan's attention: all layers forward and backward (model_layers_s), and the
// forward's share of it from the same plan evaluated forward only.
AttentionSeconds AttentionOf(const planner::PlanAnswer& answer, const planner::Estimate& plan,
                             int64_t layers) {
  AttentionSeconds a;
  a.forward_backward_s =
      plan.model_layers_s >= 0 ? plan.model_layers_s : plan.time_s * static_cast<double>(layers);
  Workload forward = answer.workload();
  forward.pass = Pass::kForward;
  const planner::PlanContext ctx(forward, answer.cluster());
  const std::unique_ptr<planner::Strategy> strategy = planner::MakeStrategy(plan.params.scheme);
  const planner::Estimate f = planner::EvaluatePlan(ctx, *strategy, plan.params);
  const double share = f.valid && plan.time_s > 0 ? f.time_s / plan.time_s : 1.0 / 3.5;
  a.forward_s = a.forward_backward_s * share;
  return a;
}

// Megatron-LM's flags for the rest of the step beside the plan's (megatron/training/arguments.py:
// --pipeline-model-parallel-size, --num-layers-per-virtual-pipeline-stage, the batch sizes,
// --recompute-granularity/-method/-num-layers, and --fp8-format hybrid, TransformerEngine's
// default recipe: E4M3 forward, E5M2 gradients).
std::string MegatronStepFlags(const StepOptions& o, int64_t layers) {
  std::string flags = " --pipeline-model-parallel-size " + std::to_string(o.pp);
  if (o.vpp > 1) {
    flags += " --num-layers-per-virtual-pipeline-stage " + std::to_string(layers / (o.pp * o.vpp));
    if (!o.overlap_p2p_comm) flags += " --no-overlap-p2p-communication";
  }
  if (auto split = SplitLayers(layers, o.pp, o.vpp); split.ok() && !split->even()) {
    flags += " --decoder-first-pipeline-num-layers " + std::to_string(split->first) +
             " --decoder-last-pipeline-num-layers " + std::to_string(split->last);
  }
  flags += " --micro-batch-size " + std::to_string(o.micro_batch) + " --global-batch-size " +
           std::to_string(o.global_batch_or_default());
  if (o.recompute == Recompute::kSelective) flags += " --recompute-granularity selective";
  if (o.recompute == Recompute::kFull) {
    flags += " --recompute-granularity full --recompute-method uniform --recompute-num-layers 1";
  }
  if (o.gemm_dtype == DType::kFp8) flags += " --fp8-format hybrid";
  if (o.tp_comm_overlap) flags += " --tp-comm-overlap";
  if (o.grad_reduce_bf16) flags += " --grad-reduce-in-bf16";
  return flags;
}

// What would make a step that does not fit fit, each change alone, its memory estimated with the
// attention layer's peak scaled by the change (halved by twice the TP or CP): full recompute, TP,
// CP (taken from DP) or PP doubled where the cluster and model allow.
std::string WhatWouldFit(const StepRequest& r, const StepOptions& o, double attention_peak,
                         double capacity) {
  struct Change {
    std::string what;
    StepOptions options;
    double peak_factor;
  };
  std::vector<Change> changes;
  if (o.recompute != Recompute::kFull) {
    StepOptions full = o;
    full.recompute = Recompute::kFull;
    changes.push_back({"full recompute", full, 1.0});
  }
  const int64_t node = r.cluster.levels.front().group_size;
  StepOptions tp = o;
  tp.tp *= 2;
  tp.cp = o.cp % 2 == 0 ? o.cp / 2 : o.cp;
  tp.dp = o.cp % 2 == 0 ? o.dp : o.dp / 2;
  if (node % tp.tp == 0 && r.model.q_heads % tp.tp == 0 && r.model.kv_heads % tp.tp == 0 &&
      tp.gpus() == o.gpus() && ValidateStepOptions(tp).ok())
    changes.push_back({"TP " + std::to_string(tp.tp), tp, 0.5});
  if (o.dp % 2 == 0 && r.seq % (4 * o.cp) == 0) {
    StepOptions cp = o;
    cp.cp *= 2;
    cp.dp /= 2;
    if (ValidateStepOptions(cp).ok()) {
      changes.push_back(
          {"CP " + std::to_string(cp.cp) + " (DP " + std::to_string(cp.dp) + ")", cp, 0.5});
    }
  }
  if (o.dp % 2 == 0 && SplitLayers(r.model.layers, o.pp * 2, o.vpp).ok()) {
    StepOptions pp = o;
    pp.pp *= 2;
    pp.dp /= 2;
    if (ValidateStepOptions(pp).ok())
      changes.push_back(
          {"PP " + std::to_string(pp.pp) + " (DP " + std::to_string(pp.dp) + ")", pp, 1.0});
  }
  std::string fits;
  for (const Change& c : changes) {
    const double bytes =
        EstimateStepMemory(r.model, c.options, r.seq, attention_peak * c.peak_factor).total_bytes();
    if (bytes <= capacity)
      fits += (fits.empty() ? "" : ", ") + c.what + " (about " + FormatBytes(bytes) + ")";
  }
  return fits.empty() ? "none of full recompute, twice the TP, CP or PP fits alone"
                      : "would fit with " + fits;
}

}  // namespace

Status RequireStepInputs(const ModelConfig& model, const Topology& cluster, DType gemm_dtype) {
  MESHPLAN_RETURN_IF_ERROR(model.RequireWholeModel());
  if (!HasGemmRate(cluster.gpu, gemm_dtype)) {
    return Status::Invalid(cluster.source + ": gpu.gemm_efficiency: no " +
                           std::string(DTypeName(gemm_dtype)) + " GEMM rate stated for " +
                           cluster.gpu.model +
                           " (the whole step times its GEMMs from it; topologies/README.md)");
  }
  return Status::Ok();
}

std::string AttentionPlanText(const planner::Estimate& plan) {
  return std::string(SchemeName(plan.params.scheme)) + " " + planner::DescribeParams(plan.params);
}

Result<StepAnswer> AnswerStep(const StepRequest& request) {
  MESHPLAN_RETURN_IF_ERROR(CheckRequest(request));
  std::vector<Recompute> choices = {request.options.recompute};
  if (request.recompute_auto) choices = {Recompute::kNone, Recompute::kFull};
  StepAnswer answer;
  for (size_t i = 0; i < choices.size(); ++i) {
    StepOptions o = request.options;
    o.recompute = choices[i];
    const StepMemory before = EstimateStepMemory(request.model, o, request.seq, 0);
    planner::PlanRequest plan_request;
    plan_request.topology = request.cluster;
    plan_request.workload = AttentionWorkload(request.model, o);
    MESHPLAN_RETURN_IF_ERROR(SetSequenceLength(plan_request.workload, request.seq));
    plan_request.model = request.model;
    plan_request.degrees = {o.tp, o.dp * o.pp};
    plan_request.framework = request.framework;
    plan_request.reserved_bytes = before.besides_transient_bytes;
    plan_request.search = request.search;
    MESHPLAN_ASSIGN_OR_RETURN(auto attention, planner::AnswerPlanRequest(plan_request));
    if (attention->result.ranked.empty()) return attention->NoPlanError();
    const planner::Estimate& plan = attention->result.ranked.front();
    StepMemory memory = EstimateStepMemory(request.model, o, request.seq, plan.peak_memory_bytes);
    const double capacity = attention->cluster().gpu.memory_bytes;
    const bool fits = memory.total_bytes() <= capacity;
    if (!fits && i + 1 < choices.size()) {
      answer.notes.push_back("recompute " + std::string(RecomputeName(o.recompute)) + ": " +
                             FormatBytes(memory.total_bytes()) + " per GPU does not fit in " +
                             FormatBytes(capacity));
      continue;
    }
    answer.options = o;
    answer.attention_s = AttentionOf(*attention, plan, request.model.layers);
    answer.plan = &plan;
    answer.attention = std::move(attention);
    answer.memory = memory;
    answer.memory_capacity_bytes = capacity;
    answer.fits = fits;
    break;
  }
  const StepOptions& o = answer.options;
  if (!answer.fits) {
    answer.notes.push_back(
        "does not fit by " +
        FormatBytes(answer.memory.total_bytes() - answer.memory_capacity_bytes) + ": " +
        WhatWouldFit(request, o, answer.plan->peak_memory_bytes, answer.memory_capacity_bytes));
  }
  if (request.framework != planner::Framework::kAny) {
    answer.framework_settings = answer.attention->FrameworkRunOf(*answer.plan).settings;
    if (request.framework == planner::Framework::kMegatron)
      answer.framework_settings += MegatronStepFlags(o, request.model.layers);
  }
  answer.time = TimeStep(request.model, o, request.cluster, request.seq, answer.attention_s);
  const int64_t sequences = o.global_batch_or_default();
  answer.model_flops = ModelFlops(request.model, request.seq, sequences);
  const double gpu_seconds = answer.step_s() * static_cast<double>(o.gpus());
  answer.tokens_per_s_per_gpu =
      static_cast<double>(sequences) * static_cast<double>(request.seq) / gpu_seconds;
  answer.model_tflops_per_gpu = answer.model_flops / gpu_seconds / 1e12;
  answer.step_kernel_rate_fraction = request.cluster.gpu.step_kernel_rate_fraction;
  if (request.model.window_layers > 0) {
    answer.notes.push_back(
        "the sliding-window layers' attention is timed under their window; "
        "their GEMMs as any layer's");
  }
  if (request.cluster.gpu.step_kernel_rate_fraction == 1) {
    answer.notes.push_back(
        "kernels timed at their rates alone: the GPU's step_kernel_rate_fraction is 1 or not "
        "stated (whole steps run them slower; the H100 entry states a fitted fraction, "
        "docs/training-step.md)");
  } else {
    char percent[32];
    std::snprintf(percent, sizeof percent, "%.1f%%",
                  100 * request.cluster.gpu.step_kernel_rate_fraction);
    answer.notes.push_back("kernels timed at " + std::string(percent) +
                           " of their rates alone, as whole steps sustain them (the GPU's "
                           "step_kernel_rate_fraction, docs/training-step.md)");
  }
  answer.notes.push_back(
      "not modelled: the embedding lookup, dropout and CUDA graphs (docs/training-step.md)");
  return answer;
}

}  // namespace meshplan::step
