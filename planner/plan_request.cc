#include "planner/plan_request.h"

#include <algorithm>
#include <utility>

#include "core/base/dtype.h"
#include "planner/evaluate_plan.h"
#include "planner/schemes/registry.h"
#include "planner/strategy.h"

namespace meshplan::planner {
namespace {

// --seq-round on a CP group of `gpus`: the sequence rounded to a multiple of 2 chunks per GPU, and
// a note saying so ("" when it already was one).
Result<std::string> RoundSequence(SeqRounding how, int64_t gpus, Workload& workload) {
  if (how == SeqRounding::kAsGiven) return std::string();
  const std::string word = how == SeqRounding::kUp ? "up" : "down";
  const int64_t unit = 2 * gpus;
  const int64_t seq = workload.seq_len;
  int64_t rounded = how == SeqRounding::kUp ? (seq + unit - 1) / unit * unit : seq / unit * unit;
  if (rounded < unit) rounded = unit;
  if (rounded == seq) return std::string();
  MESHPLAN_RETURN_IF_ERROR(SetSequenceLength(workload, rounded).WithContext("--seq-round"));
  MESHPLAN_RETURN_IF_ERROR(workload.Validate().WithContext("--seq-round"));
  return "--seq " + std::to_string(seq) + " rounded " + word + " to " + std::to_string(rounded) +
         " (a multiple of " + std::to_string(unit) + ": 2 chunks per GPU x " +
         std::to_string(gpus) + " GPUs)";
}

// Megatron's plan for the sliding-window layers of a model whose global layers run a comm type
// TransformerEngine refuses under a window (p2p, a2a+p2p): the fastest plan on the same CP group
// that Megatron runs under the window (all_gather and a2a: each scheme's RunIn says which),
// fitting first (nullopt: none is valid), among the request's schemes (empty: all).
std::optional<Estimate> MegatronWindowPlan(const PlanAnswer& answer,
                                           const std::vector<Scheme>& schemes) {
  const Workload& window = *answer.prepared.layers.window;
  const FrameworkJob job = answer.prepared.Job();
  std::optional<Estimate> best;
  const std::vector<Scheme> candidates =
      schemes.empty() ? std::vector<Scheme>(AllSchemes().begin(), AllSchemes().end()) : schemes;
  for (const Scheme& scheme : candidates) {
    const Strategy& strategy = *FindStrategy(scheme);
    for (const SchemeParams& p : strategy.Enumerate(*answer.window_ctx)) {
      if (!RunIn(Framework::kMegatron, p, window, job).why_not.empty()) continue;
      Estimate e = EvaluatePlan(*answer.window_ctx, strategy, p);
      if (!e.valid) continue;
      if (!best || (e.fits && !best->fits) || (e.fits == best->fits && e.time_s < best->time_s))
        best = std::move(e);
    }
  }
  return best;
}

// Notes `why` as the reason the framework runs no plan of `scheme`, unless one is noted already:
// a reason that is not a variant's replaces a variant's.
void NoteRefusal(const Scheme& scheme, const FrameworkRun& run,
                 std::vector<FrameworkRefusal>& out) {
  auto it = std::find_if(out.begin(), out.end(),
                         [&](const FrameworkRefusal& r) { return r.scheme == scheme; });
  if (it == out.end()) {
    out.push_back({scheme, run.why_not, run.variant});
  } else if (it->variant && !run.variant) {
    *it = {scheme, run.why_not, false};
  }
}

// The framework's filter: keeps the ranked plans it runs on the whole model (in order), notes
// the best fitting plan over every scheme and, per scheme it runs none of, the real blocker.
// Megatron runs the sliding-window layers of a plan whose comm type TransformerEngine refuses
// there with another (MegatronWindowPlan, Estimate::window_params).
void KeepFrameworkPlans(PlanAnswer& answer, const SearchOptions& search) {
  SearchResult& result = answer.result;
  answer.valid_any = result.ranked.size();
  const Framework framework = answer.prepared.framework;
  if (framework == Framework::kAny || result.ranked.empty()) return;
  std::optional<Estimate> window_plan;
  if (framework == Framework::kMegatron && answer.window_ctx)
    window_plan = MegatronWindowPlan(answer, search.schemes);
  const FrameworkJob job = answer.prepared.Job();
  std::vector<FrameworkRun> runs;
  for (Estimate& e : result.ranked) {
    FrameworkRun run = answer.FrameworkRunOf(e);
    if (!run.why_not.empty() && window_plan &&
        RunIn(framework, e.params, answer.workload(), job).why_not.empty()) {
      e.window_params = window_plan->params;
      run = answer.FrameworkRunOf(e);
    }
    runs.push_back(std::move(run));
  }
  for (const Estimate& e : result.ranked) {
    if (e.fits) {
      answer.best_any = e;
      break;
    }
  }
  std::vector<Estimate> kept;
  for (size_t i = 0; i < result.ranked.size(); ++i) {
    Estimate& e = result.ranked[i];
    if (runs[i].why_not.empty()) {
      kept.push_back(std::move(e));
    } else {
      NoteRefusal(e.params.scheme, runs[i], answer.framework_out);
    }
  }
  // A scheme with some plan kept is not refused.
  std::erase_if(answer.framework_out, [&](const FrameworkRefusal& r) {
    return std::any_of(kept.begin(), kept.end(),
                       [&](const Estimate& e) { return e.params.scheme == r.scheme; });
  });
  result.ranked = std::move(kept);
}

// The reasons no scheme has a valid plan, each said once: schemes with the same reason follow
// the first as "; a, b: the same"; when a reason is a length the layouts cannot split, how to
// get one they can.
std::string NoPlanReasons(const SearchResult& result) {
  std::vector<std::pair<std::string, std::vector<std::string>>> groups;  // reason -> schemes
  bool any_length = false;
  for (const Estimate& e : result.rejected) {
    const std::string scheme(SchemeName(e.params.scheme));
    any_length = any_length || e.reason.find("is not divisible by") != std::string::npos;
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const auto& g) { return g.first == e.reason; });
    if (it == groups.end()) {
      groups.push_back({e.reason, {scheme}});
    } else {
      it->second.push_back(scheme);
    }
  }
  std::string out;
  for (const auto& [reason, schemes] : groups) {
    out += (out.empty() ? "" : "; ") + schemes.front() + ": " + reason;
    if (schemes.size() > 1) {
      out += "; ";
      for (size_t i = 1; i < schemes.size(); ++i) out += (i > 1 ? ", " : "") + schemes[i];
      out += ": the same";
    }
  }
  if (any_length) {
    out +=
        "; --seq-round up or down takes the nearest length they split (K and M are binary: "
        "1M = 1048576)";
  }
  return out;
}

// Appends `note` to `notes` ("; " between); nothing for "".
void AddNote(std::string& notes, const std::string& note) {
  if (note.empty()) return;
  notes += (notes.empty() ? "" : "; ") + note;
}

// TransformerEngine prefers cuDNN's fused attention over FlashAttention on Hopper and later
// (dot_product_attention/utils.py, get_attention_backend): the cluster times the cudnn curve when
// its GPU has one (the GPU catalog has cudnn curves for Hopper GPUs only). Returns the note
// saying so, or "".
std::string PreferFusedAttention(Topology& cluster) {
  GpuSpec& gpu = cluster.gpu;
  if (gpu.attention_kernel == "cudnn" || gpu.attention_kernels.count("cudnn") == 0) return "";
  const std::string was = gpu.attention_kernel;
  if (!cluster.UseAttentionKernel("cudnn").ok()) return "";
  return "kernels timed with cudnn, not " + was +
         ": TransformerEngine prefers cuDNN's fused attention on Hopper (--attention-kernel "
         "overrides)";
}

}  // namespace

Result<SeqRounding> ParseSeqRounding(std::string_view text) {
  if (text.empty()) return SeqRounding::kAsGiven;
  if (text == "up") return SeqRounding::kUp;
  if (text == "down") return SeqRounding::kDown;
  return Status::Invalid("--seq-round: '" + std::string(text) + "' is not up or down");
}

FrameworkJob PreparedRequest::Job() const {
  FrameworkJob job;
  job.cp_gpus = cluster.num_gpus();
  job.tp = degrees.tp;
  job.dp = degrees.dp;
  if (model) {
    job.sliding = model->sliding;
    job.logit_softcapping = model->logit_softcapping;
  }
  return job;
}

Result<PreparedRequest> PrepareRequest(const PlanRequest& request) {
  if (std::string why = FrameworkUnsupported(request.framework); !why.empty())
    return Status::Invalid(why);
  PreparedRequest p;
  p.framework = request.framework;
  p.model = request.model;
  p.workload = request.workload;
  if (request.framework == Framework::kMegatron && !request.partial_dtype_given &&
      p.workload.partial_dtype != p.workload.dtype) {
    p.workload.partial_dtype = p.workload.dtype;
    p.framework_note = "partials travel in " + std::string(DTypeName(p.workload.dtype)) +
                       ", as TransformerEngine sends them (--partial-dtype overrides)";
  }
  MESHPLAN_ASSIGN_OR_RETURN(p.cluster, ContextParallelCluster(request.topology, request.degrees));
  p.degrees = request.degrees;
  if (request.framework == Framework::kMegatron && !request.attention_kernel_given)
    AddNote(p.framework_note, PreferFusedAttention(p.cluster));
  MESHPLAN_RETURN_IF_ERROR(DivideHeads(p.workload, request.degrees.tp));
  MESHPLAN_ASSIGN_OR_RETURN(p.rounding_note,
                            RoundSequence(request.seq_rounding, p.cluster.num_gpus(), p.workload));
  if (request.model) {
    MESHPLAN_ASSIGN_OR_RETURN(p.layers, MakeModelWorkloads(*request.model, p.workload));
    // Every layer slides: the plans are ranked on the window's workload.
    if (p.layers.window && p.layers.layers.global_layers == 0) {
      p.workload = *p.layers.window;
      p.layers.window.reset();
    }
  }
  MESHPLAN_RETURN_IF_ERROR(p.cluster.SupportsDType(p.workload.dtype));
  return p;
}

PlanAnswer::PlanAnswer(PreparedRequest prepared_request, double reserved_bytes)
    : prepared(std::move(prepared_request)),
      ctx(prepared.workload, prepared.cluster, reserved_bytes) {
  if (prepared.layers.window) {
    window_ctx =
        std::make_unique<PlanContext>(*prepared.layers.window, prepared.cluster, reserved_bytes);
  }
}

FrameworkRun PlanAnswer::FrameworkRunOf(const Estimate& plan) const {
  const SchemeParams* window_plan = plan.window_params ? &*plan.window_params : nullptr;
  const Workload* window = prepared.layers.window ? &*prepared.layers.window : nullptr;
  return RunModelIn(prepared.framework, plan.params, workload(), window_plan, window,
                    prepared.Job());
}

const Estimate* PlanAnswer::BestOf(Scheme scheme) const {
  for (const Estimate& e : result.ranked) {
    if (e.params.scheme == scheme) return &e;
  }
  return nullptr;
}

std::string PlanAnswer::WhyNone(Scheme scheme) const {
  for (const FrameworkRefusal& r : framework_out) {
    if (r.scheme == scheme) {
      return "--framework " + std::string(FrameworkName(prepared.framework)) + ": " + r.why;
    }
  }
  std::string reason = "no valid plan";
  for (const Estimate& e : result.rejected) {
    if (e.params.scheme == scheme) reason = e.reason;
  }
  return reason;
}

Status PlanAnswer::NoPlanError() const {
  if (valid_any > 0) {
    std::string reasons;
    for (const FrameworkRefusal& r : framework_out) {
      reasons += (reasons.empty() ? "" : "; ") + std::string(SchemeName(r.scheme)) + ": " + r.why;
    }
    return Status::Invalid("--framework " + std::string(FrameworkName(prepared.framework)) + ": " +
                           std::string(FrameworkTitle(prepared.framework)) +
                           " runs none of the valid plans (" + reasons + ")");
  }
  return Status::Invalid("no scheme has a valid plan for " + workload().Describe() + " on " +
                         std::to_string(ctx.num_ranks) + " GPUs (" + NoPlanReasons(result) + ")");
}

Result<std::unique_ptr<PlanAnswer>> AnswerPlanRequest(const PlanRequest& request,
                                                      const ReplayOptions& replay) {
  MESHPLAN_ASSIGN_OR_RETURN(PreparedRequest prepared, PrepareRequest(request));
  auto answer = std::make_unique<PlanAnswer>(std::move(prepared), request.reserved_bytes);
  answer->result = Search(answer->ctx, request.search);
  KeepFrameworkPlans(*answer, request.search);
  if (replay.before_replay) {
    MESHPLAN_RETURN_IF_ERROR(replay.before_replay(*answer));
  }
  if (replay.timer != nullptr && replay.top > 0) {
    MESHPLAN_RETURN_IF_ERROR(
        RerankBySimulation(answer->ctx, *replay.timer, replay.top, &answer->result));
  }
  if (request.model) {
    TimeModelLayers(answer->window_ctx.get(), answer->prepared.layers.layers, &answer->result);
  }
  return answer;
}

}  // namespace meshplan::planner
