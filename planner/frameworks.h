// The training frameworks whose context parallelism meshplan maps plans onto: their names, and
// the rules and settings the schemes' units share. Which plans a framework runs, and with what
// settings, each scheme's unit says (Strategy::RunIn); docs/frameworks.md cites every rule.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"
#include "core/plan/plan.h"
#include "core/workload/workload.h"

namespace meshplan::planner {

enum class Framework { kAny, kMegatron, kYunchang, kInternEvo, kMagi };

// "any", "megatron", "yunchang", "internevo", "magi".
std::string_view FrameworkName(Framework framework);
// The inverse; an unknown name lists the known ones.
Result<Framework> ParseFramework(std::string_view text);
// "Megatron-Core (TransformerEngine)", "yunchang (long-context-attention)", "InternEvo
// (2D-Attention)", "MagiAttention", "any framework".
std::string_view FrameworkTitle(Framework framework);
// Why a framework cannot plan at all ("" when it can): MagiAttention, whose dispatch meshplan does
// not model.
std::string FrameworkUnsupported(Framework framework);

// What a framework's settings depend on beside the plan and its workload: the job around the
// context-parallel group (meshplan's layout of it: TP innermost on a node, then CP, DP outermost;
// ParallelDegrees) and the model's layers.
struct FrameworkJob {
  int64_t cp_gpus = 1;  // the context-parallel group
  int64_t tp = 1;       // tensor-parallel degree beside it
  int64_t dp = 1;       // data-parallel replicas
  // The model's layers in order, true where one slides (ModelConfig::sliding; empty: no sliding
  // layer, or no model).
  std::vector<bool> sliding;
  bool logit_softcapping = false;  // the model soft-caps its attention scores
};

// Whether a framework runs a plan: why not ("" when it does), and the settings that run it.
struct FrameworkRun {
  std::string why_not;
  std::string settings;  // "" for Framework::kAny
  // The refusal is about a choice another plan of the same scheme makes otherwise (layout, cache,
  // placement): a scheme's refusal quotes such a reason only when it has no other.
  bool variant = false;
  // Megatron: the plan's --cp-comm-type, and the flags that comm type needs beside it.
  std::string comm_type;
  std::string comm_flags;
  // What the framework does differently from the timed plan without changing its time (a dropped
  // soft-capping), or "".
  std::string note;
};

// The plan's scheme's answer (Strategy::RunIn, from the registry).
FrameworkRun RunIn(Framework framework, const SchemeParams& params, const Workload& workload,
                   const FrameworkJob& job);
// The same for a context-parallel group of `cp_gpus` alone (no TP, DP or model).
FrameworkRun RunIn(Framework framework, const SchemeParams& params, const Workload& workload,
                   int64_t cp_gpus);

// A model's layers under a framework: the global layers run `plan` on `global`; the sliding ones
// (job.sliding), when `window` is given, run `window_plan` (nullptr: `plan`) on it. Refused when
// either kind is; Megatron then takes one --cp-comm-type per layer when the kinds' differ.
// REQUIRES: window_plan is nullptr but for Megatron (the others run one setting for every layer).
FrameworkRun RunModelIn(Framework framework, const SchemeParams& plan, const Workload& global,
                        const SchemeParams* window_plan, const Workload* window,
                        const FrameworkJob& job);

// Rules the units share (each returns "" when the plan passes).
namespace framework_rules {
// The masks the rings of these frameworks take: causal or full.
std::string CausalOrFull(const Workload& workload, std::string_view what);
// A forward cache (the backward reusing what the forward fetched) where the framework has none.
std::string NoForwardCache(const SchemeParams& params, const Workload& workload);
// TransformerEngine splits every sequence in 2 x CP chunks (rank r: r and 2P - 1 - r, meshplan's
// zigzag); a full mask costs the same on contiguous shards. Packed documents run in its THD
// format, which splits each document so (doc-zigzag).
std::string MegatronLayout(const SchemeParams& params, const Workload& workload);
// The masks TransformerEngine's context parallelism takes for `what`: causal, full and packed
// documents (THD format: padding_causal or padding), and sliding windows where `window_ok`.
std::string MegatronMask(const Workload& workload, std::string_view what, bool window_ok);
// Packed documents under THD: each a multiple of 2 x CP, and of 2 x CP x TP with sequence
// parallelism, as Megatron pads them.
std::string MegatronDocuments(const Workload& workload, const FrameworkJob& job);
// Megatron's validate_args: the sequence a multiple of 2 x CP whatever the mask; with sequence
// parallelism (TP > 1) each CP rank's share a multiple of TP.
std::string MegatronSequence(const Workload& workload, const FrameworkJob& job);
// TransformerEngine runs sliding-window attention with the a2a and all_gather comm types only.
std::string MegatronWindow(const Workload& workload, std::string_view comm_type);
// yunchang's rings take causal or full masks.
std::string YunchangMask(const Workload& workload);
// yunchang's rings: basic (contiguous), zigzag, strip (striped); zigzag and strip causal only;
// no forward cache.
std::string YunchangRing(const SchemeParams& params, const Workload& workload);
// InternEvo's tensor.size is its sequence-parallel degree (mode "isp"): no TP beside it.
std::string InternEvoDegrees(const FrameworkJob& job);
}  // namespace framework_rules

// A plan the framework runs with `settings`.
FrameworkRun Runs(std::string settings);
// A refusal (FrameworkRun::variant when `variant`).
FrameworkRun Refused(std::string why, bool variant = false);
// The first reason given ("" passes): the blockers (what no plan of the scheme changes) before
// the variants' (what another plan of the scheme chooses otherwise); nullopt when all pass.
std::optional<FrameworkRun> FirstRefusal(std::initializer_list<std::string> blockers,
                                         std::initializer_list<std::string> variants);

// Megatron's attention flags for `job` with `--cp-comm-type comm_type` on every layer: the whole
// line (MegatronLine) with that one value.
FrameworkRun MegatronRun(const Workload& workload, const FrameworkJob& job,
                         std::string_view comm_type, std::string comm_flags = "");
// --tensor-model-parallel-size T [--sequence-parallel] --context-parallel-size P --cp-comm-type
// one value, or one per layer [comm_flags] --seq-length S.
std::string MegatronLine(const Workload& workload, const FrameworkJob& job,
                         const std::vector<std::string>& comm_types, const std::string& comm_flags);
// yunchang's calls: U x R, Ulysses on the low ranks or not, the ring implementation by layout,
// the input sharding that matches it, and, with TP, process groups built by hand.
std::string YunchangSettings(int64_t ulysses, int64_t ring, bool ulysses_low, Layout layout,
                             const FrameworkJob& job);

}  // namespace meshplan::planner
