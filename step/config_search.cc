#include "step/config_search.h"

#include <algorithm>
#include <numeric>

#include "core/base/units.h"
#include "core/cost/attention_flops.h"

namespace meshplan::step {
namespace {

std::vector<int64_t> Divisors(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t d = 1; d <= n; ++d)
    if (n % d == 0) out.push_back(d);
  return out;
}

bool Allowed(int64_t fixed, int64_t value) { return fixed == 0 || fixed == value; }

std::vector<StepOptions> Candidates(const StepRequest& r, const FixedDegrees& fixed) {
  const ModelConfig& m = r.model;
  const int64_t gpus = r.cluster.num_gpus();
  const int64_t node = r.cluster.levels.front().group_size;
  const int64_t sequences = r.options.global_batch / r.options.micro_batch;
  std::vector<StepOptions> out;
  for (int64_t tp = 1; tp <= node && gpus % tp == 0; tp *= 2) {
    if (node % tp != 0 || m.q_heads % tp != 0 || m.kv_heads % tp != 0 || !Allowed(fixed.tp, tp))
      continue;
    for (int64_t pp : Divisors(gpus / tp)) {
      if (!Allowed(fixed.pp, pp) || !SplitLayers(m.layers, pp, 1).ok()) continue;
      for (int64_t cp : Divisors(gpus / (tp * pp))) {
        if (!Allowed(fixed.cp, cp) || (cp > 1 && r.seq % (2 * cp) != 0)) continue;
        const int64_t dp = gpus / (tp * pp * cp);
        if (!Allowed(fixed.dp, dp) || sequences % dp != 0) continue;
        StepOptions o = r.options;
        o.tp = tp;
        o.pp = pp;
        o.cp = cp;
        o.dp = dp;
        o.vpp = 1;
        out.push_back(o);
      }
    }
  }
  return out;
}

// Half the fastest forward and backward rates any attention library of the GPU file states: a
// rate no plan's kernels beat (occupancy, head dims and cuts only slow them).
double AttentionBoundSeconds(const StepRequest& r, const StepOptions& o) {
  const GpuSpec& gpu = r.cluster.gpu;
  double best = 0, backward = 1;
  for (const auto& [name, curve] : gpu.attention_kernels) {
    for (const EfficiencyPoint& p : curve.efficiency) best = std::max(best, p.efficiency);
    backward = std::max(backward, curve.backward_rate_ratio);
  }
  for (const EfficiencyPoint& p : gpu.attention_efficiency) best = std::max(best, p.efficiency);
  const double rate = gpu.PeakFlopsPerSecond(r.model.dtype.value_or(DType::kBf16)) * best;
  if (!(rate > 0)) return 0;
  // Causal pairs of the global layers (a window's layers are bounded by 0).
  const double s = static_cast<double>(r.seq);
  const double forward = 4.0 * static_cast<double>(o.micro_batch) * (s * (s + 1) / 2) *
                         static_cast<double>(r.model.q_heads * r.model.head_dim) *
                         static_cast<double>(r.model.global_layers()) /
                         static_cast<double>(o.tp * o.cp);
  return 0.5 * (forward / rate + kBackwardFlopsFactor * forward / (rate * backward));
}

}  // namespace

Result<StepSearch> SearchStepConfigs(const StepRequest& request, const FixedDegrees& fixed) {
  if (request.options.global_batch <= 0) {
    return Status::Invalid(
        "--global-batch: required when the degrees are searched (every configuration must run "
        "the same sequences a step)");
  }
  MESHPLAN_RETURN_IF_ERROR(
      RequireStepInputs(request.model, request.cluster, request.options.gemm_dtype));
  StepSearch search;
  struct Bounded {
    StepOptions options;
    double bound_s;
  };
  std::vector<Bounded> queue;
  double smallest_bytes = -1;
  StepOptions smallest;
  for (const StepOptions& o : Candidates(request, fixed)) {
    ++search.candidates;
    StepOptions full = o;
    full.recompute = Recompute::kFull;
    const double bytes = EstimateStepMemory(request.model, full, request.seq, 0).total_bytes();
    if (smallest_bytes < 0 || bytes < smallest_bytes) {
      smallest_bytes = bytes;
      smallest = full;
    }
    if (bytes > request.cluster.gpu.memory_bytes) continue;  // too large even so
    const double attention = AttentionBoundSeconds(request, o);
    const StepTime t =
        TimeStep(request.model, o, request.cluster, request.seq, AttentionSeconds{attention, 0});
    // The data-parallel tail is left out of the bound: a shorter backward hides less of it.
    queue.push_back({o, t.step_s() - t.dp_exposed_s});
  }
  const std::string gpus = std::to_string(request.cluster.num_gpus()) + " GPUs";
  if (search.candidates == 0) {
    return Status::Invalid("--search: no split of " + gpus +
                           " suits the model and batch (TP a power of two dividing a node and the "
                           "heads, DP dividing the global batch / micro batch, the degrees given)");
  }
  if (queue.empty()) {
    return Status::Invalid("--search: no configuration of " + gpus + " fits: the smallest, " +
                           smallest.Describe() + ", needs " + FormatBytes(smallest_bytes) +
                           " a GPU of " + FormatBytes(request.cluster.gpu.memory_bytes));
  }
  std::sort(queue.begin(), queue.end(),
            [](const Bounded& a, const Bounded& b) { return a.bound_s < b.bound_s; });
  double best_fitting = -1;
  for (const Bounded& b : queue) {
    if (best_fitting >= 0 && b.bound_s >= best_fitting) break;
    StepRequest one = request;
    one.options = b.options;
    one.recompute_auto = true;
    auto answer = AnswerStep(one);
    ++search.evaluated;
    if (!answer.ok()) continue;  // e.g. no CP plan the framework runs on this split
    SearchedStep s;
    s.options = answer->options;
    s.step_s = answer->step_s();
    s.model_tflops_per_gpu = answer->model_tflops_per_gpu;
    s.fits = answer->fits;
    s.memory_bytes = answer->memory.total_bytes();
    s.plan = AttentionPlanText(*answer->plan);
    if (s.fits && (best_fitting < 0 || s.step_s < best_fitting)) best_fitting = s.step_s;
    search.ranked.push_back(std::move(s));
  }
  std::stable_sort(search.ranked.begin(), search.ranked.end(),
                   [](const SearchedStep& a, const SearchedStep& b) {
                     if (a.fits != b.fits) return a.fits;
                     return a.step_s < b.step_s;
                   });
  return search;
}

Result<FrameworkComparison> CompareFrameworks(const StepRequest& request,
                                              const FixedDegrees& fixed) {
  StepRequest any = request;
  any.framework = planner::Framework::kAny;
  MESHPLAN_ASSIGN_OR_RETURN(StepSearch overall, SearchStepConfigs(any, fixed));
  if (overall.ranked.empty()) return Status::Invalid("--search: no configuration has a plan");
  FrameworkComparison out;
  out.overall = overall.ranked.front();
  // The overall best's attention, to ask each framework whether it runs that plan.
  StepRequest best = any;
  best.options = out.overall.options;
  MESHPLAN_ASSIGN_OR_RETURN(StepAnswer answer, AnswerStep(best));
  const planner::FrameworkJob job = answer.attention->prepared.Job();
  for (planner::Framework f : {planner::Framework::kMegatron, planner::Framework::kYunchang,
                               planner::Framework::kInternEvo}) {
    FrameworkBest fb{f, std::nullopt, ""};
    StepRequest one = request;
    one.framework = f;
    auto search = SearchStepConfigs(one, fixed);
    if (search.ok() && !search->ranked.empty()) fb.best = search->ranked.front();
    if (!fb.best || fb.best->step_s > out.overall.step_s * (1 + 1e-9)) {
      fb.why_not_overall =
          planner::RunIn(f, answer.plan->params, answer.attention->workload(), job).why_not;
    }
    out.frameworks.push_back(std::move(fb));
  }
  return out;
}

}  // namespace meshplan::step
