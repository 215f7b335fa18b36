#include "planner/frameworks.h"

#include "planner/strategy.h"

namespace meshplan::planner {

std::string_view FrameworkName(Framework framework) {
  switch (framework) {
    case Framework::kMegatron:
      return "megatron";
    case Framework::kYunchang:
      return "yunchang";
    case Framework::kInternEvo:
      return "internevo";
    case Framework::kMagi:
      return "magi";
    default:
      return "any";
  }
}

std::string_view FrameworkTitle(Framework framework) {
  switch (framework) {
    case Framework::kMegatron:
      return "Megatron-Core (TransformerEngine)";
    case Framework::kYunchang:
      return "yunchang (long-context-attention)";
    case Framework::kInternEvo:
      return "InternEvo (2D-Attention)";
    case Framework::kMagi:
      return "MagiAttention";
    default:
      return "any framework";
  }
}

Result<Framework> ParseFramework(std::string_view text) {
  for (Framework f : {Framework::kAny, Framework::kMegatron, Framework::kYunchang,
                      Framework::kInternEvo, Framework::kMagi}) {
    if (text == FrameworkName(f)) return f;
  }
  return Status::Invalid("--framework: unknown framework '" + std::string(text) +
                         "' (expected megatron, yunchang, internevo, magi or any)");
}

std::string FrameworkUnsupported(Framework framework) {
  if (framework != Framework::kMagi) return "";
  return "--framework magi: MagiAttention sends each rank only the K,V ranges its queries need "
         "(GroupCast/GroupReduce over its own dispatch), which is no meshplan scheme; the "
         "all-gather of K,V bounds its bytes from above (docs/frameworks.md)";
}

FrameworkRun RunIn(Framework framework, const SchemeParams& params, const Workload& workload,
                   int64_t cp_gpus) {
  if (framework == Framework::kAny) return {};
  if (std::string why = FrameworkUnsupported(framework); !why.empty()) return {why, ""};
  const std::unique_ptr<Strategy> strategy = MakeStrategy(params.scheme);
  if (strategy == nullptr) return {"unknown scheme", ""};
  return strategy->RunIn(framework, params, workload, cp_gpus);
}

namespace framework_rules {

std::string CausalOrFull(const Workload& w, std::string_view what) {
  if (w.mask.kind == MaskKind::kCausal || w.mask.kind == MaskKind::kFull) return "";
  return std::string(what) + " takes causal or full masks";
}

std::string NoForwardCache(const SchemeParams& p, const Workload& w) {
  if (p.cache_forward && HasBackward(w.pass))
    return "it sends K,V again in the backward (no forward cache)";
  return "";
}

std::string MegatronLayout(const SchemeParams& p, const Workload& w) {
  if (p.layout == Layout::kZigzag) return "";
  if (p.layout == Layout::kContiguous && w.mask.kind == MaskKind::kFull) return "";
  return "its sequences are split in 2 x CP chunks (zigzag), not " +
         std::string(LayoutName(p.layout));
}

std::string YunchangRing(const SchemeParams& p, const Workload& w) {
  if (std::string why = NoForwardCache(p, w); !why.empty()) return why;
  if (p.layout == Layout::kBalanced) return "its rings have no balanced layout";
  if (p.layout == Layout::kContiguous) return CausalOrFull(w, "its basic ring");
  if (w.mask.kind != MaskKind::kCausal) return "its zigzag and strip rings are causal only";
  return "";
}

}  // namespace framework_rules

std::string MegatronSettings(int64_t cp_gpus, std::string_view comm_type) {
  return "--context-parallel-size " + std::to_string(cp_gpus) + " --cp-comm-type " +
         std::string(comm_type);
}

std::string YunchangSettings(int64_t ulysses, int64_t ring, bool ulysses_low, Layout layout) {
  const char* impl = layout == Layout::kContiguous ? "basic"
                     : layout == Layout::kStriped  ? "strip"
                                                   : "zigzag";
  return "set_seq_parallel_pg(" + std::to_string(ulysses) + ", " + std::to_string(ring) +
         ", rank, world_size, use_ulysses_low=" + (ulysses_low ? "True" : "False") +
         "); LongContextAttention(ring_impl_type=\"" + impl + "\")";
}

}  // namespace meshplan::planner
