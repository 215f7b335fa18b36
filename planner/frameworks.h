// The training frameworks whose context parallelism meshplan maps plans onto: their names, and
// the rules and settings the schemes' units share. Which plans a framework runs, and with what
// settings, each scheme's unit says (Strategy::RunIn); docs/frameworks.md cites every rule.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

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

// Whether a framework runs a plan: why not ("" when it does), and the settings that run it.
struct FrameworkRun {
  std::string why_not;
  std::string settings;  // "" for Framework::kAny
};

// The plan's scheme's answer (Strategy::RunIn, from the registry).
FrameworkRun RunIn(Framework framework, const SchemeParams& params, const Workload& workload,
                   int64_t cp_gpus);

// Rules the units share (each returns "" when the plan passes).
namespace framework_rules {
// The masks the rings of these frameworks take: causal or full.
std::string CausalOrFull(const Workload& workload, std::string_view what);
// A forward cache (the backward reusing what the forward fetched) where the framework has none.
std::string NoForwardCache(const SchemeParams& params, const Workload& workload);
// TransformerEngine splits every sequence in 2 x CP chunks (rank r: r and 2P - 1 - r, meshplan's
// zigzag); a full mask costs the same on contiguous shards.
std::string MegatronLayout(const SchemeParams& params, const Workload& workload);
// yunchang's rings: basic (contiguous), zigzag, strip (striped); zigzag and strip causal only;
// no forward cache.
std::string YunchangRing(const SchemeParams& params, const Workload& workload);
}  // namespace framework_rules

// Megatron's flags for a CP group of `cp_gpus` and `--cp-comm-type comm_type`.
std::string MegatronSettings(int64_t cp_gpus, std::string_view comm_type);
// yunchang's calls: U x R, Ulysses on the low ranks or not, the ring implementation by layout.
std::string YunchangSettings(int64_t ulysses, int64_t ring, bool ulysses_low, Layout layout);

}  // namespace meshplan::planner
