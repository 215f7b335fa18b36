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
                   const FrameworkJob& job) {
  if (framework == Framework::kAny) return {};
  if (std::string why = FrameworkUnsupported(framework); !why.empty()) return Refused(why);
  const std::unique_ptr<Strategy> strategy = MakeStrategy(params.scheme);
  if (strategy == nullptr) return Refused("unknown scheme");
  return strategy->RunIn(framework, params, workload, job);
}

FrameworkRun RunIn(Framework framework, const SchemeParams& params, const Workload& workload,
                   int64_t cp_gpus) {
  FrameworkJob job;
  job.cp_gpus = cp_gpus;
  return RunIn(framework, params, workload, job);
}

namespace {

// Megatron's --cp-comm-type list: the global layers' value and the sliding layers', in layer
// order (transformer_layer.py gives layer n the list's entry n - 1).
std::vector<std::string> PerLayerCommTypes(const std::vector<bool>& sliding,
                                           const std::string& global, const std::string& window) {
  std::vector<std::string> out;
  for (bool slides : sliding) out.push_back(slides ? window : global);
  return out;
}

// What TransformerEngine and Megatron drop of the model as timed ("" when nothing).
std::string MegatronNote(const FrameworkJob& job) {
  if (!job.logit_softcapping) return "";
  return "note: Megatron-Core and TransformerEngine's context-parallel paths run no logit "
         "soft-capping (they pass softcap=0.0 to FlashAttention): the model's "
         "attn_logit_softcapping is dropped, which changes its numerics, not the time";
}

}  // namespace

FrameworkRun RunModelIn(Framework framework, const SchemeParams& plan, const Workload& global,
                        const SchemeParams* window_plan, const Workload* window,
                        const FrameworkJob& job) {
  FrameworkRun run = RunIn(framework, plan, global, job);
  if (framework == Framework::kAny || !run.why_not.empty()) return run;
  if (framework == Framework::kMegatron) run.note = MegatronNote(job);
  if (window == nullptr || job.sliding.empty()) return run;
  const SchemeParams& sliding_plan = window_plan != nullptr ? *window_plan : plan;
  const FrameworkRun slides = RunIn(framework, sliding_plan, *window, job);
  if (!slides.why_not.empty()) {
    return Refused("its sliding-window layers: " + slides.why_not, slides.variant);
  }
  if (framework != Framework::kMegatron) return run;  // one setting for every layer
  if (slides.comm_type != run.comm_type) {
    run.settings =
        MegatronLine(global, job, PerLayerCommTypes(job.sliding, run.comm_type, slides.comm_type),
                     run.comm_flags);
  }
  return run;
}

FrameworkRun Runs(std::string settings) {
  FrameworkRun run;
  run.settings = std::move(settings);
  return run;
}

FrameworkRun Refused(std::string why, bool variant) {
  FrameworkRun run;
  run.why_not = std::move(why);
  run.variant = variant;
  return run;
}

std::optional<FrameworkRun> FirstRefusal(std::initializer_list<std::string> blockers,
                                         std::initializer_list<std::string> variants) {
  for (const std::string& why : blockers) {
    if (!why.empty()) return Refused(why);
  }
  for (const std::string& why : variants) {
    if (!why.empty()) return Refused(why, /*variant=*/true);
  }
  return std::nullopt;
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
  if (w.mask.IsDocuments()) {
    if (p.layout == Layout::kDocZigzag) return "";
    return "packed documents run in TransformerEngine's THD format, which splits each document "
           "in 2 x CP chunks (doc-zigzag), not " +
           std::string(LayoutName(p.layout));
  }
  if (p.layout == Layout::kZigzag) return "";
  if (p.layout == Layout::kContiguous && w.mask.kind == MaskKind::kFull) return "";
  return "its sequences are split in 2 x CP chunks (zigzag), not " +
         std::string(LayoutName(p.layout));
}

std::string MegatronSequence(const Workload& w, const FrameworkJob& job) {
  const int64_t cp = job.cp_gpus;
  if (cp > 1 && w.seq_len % (2 * cp) != 0) {
    return "its validate_args needs --seq-length a multiple of 2 x CP = " + std::to_string(2 * cp) +
           " whatever the mask, and " + std::to_string(w.seq_len) +
           " is not (--seq-round up or down takes one)";
  }
  if (job.tp > 1 && (w.seq_len / cp) % job.tp != 0) {
    return "with --sequence-parallel each CP rank's " + std::to_string(w.seq_len / cp) +
           " tokens are split over TP = " + std::to_string(job.tp) + ", which does not divide them";
  }
  return "";
}

std::string MegatronMask(const Workload& w, std::string_view what, bool window_ok) {
  if (w.mask.IsDocuments() || (window_ok && w.mask.kind == MaskKind::kWindow)) return "";
  if (w.mask.kind == MaskKind::kCausal || w.mask.kind == MaskKind::kFull) return "";
  return std::string(what) + " takes causal, full" + (window_ok ? ", sliding-window" : "") +
         " or packed-document masks";
}

std::string MegatronDocuments(const Workload& w, const FrameworkJob& job) {
  if (!w.mask.IsDocuments()) return "";
  const int64_t unit = 2 * job.cp_gpus * job.tp;
  int64_t start = 0;
  for (size_t d = 0; d < w.mask.document_lengths.size(); ++d) {
    const int64_t length = w.mask.document_lengths[d];
    if (length % unit != 0) {
      return "its packed documents (THD) are each padded to a multiple of 2 x CP" +
             std::string(job.tp > 1 ? " x TP" : "") + " = " + std::to_string(unit) +
             " tokens, and document " + std::to_string(d + 1) + " (tokens " +
             std::to_string(start) + "..) has " + std::to_string(length) +
             " (pad the documents: docs-sampled:...:align=" + std::to_string(unit) + ")";
    }
    start += length;
  }
  return "";
}

std::string MegatronWindow(const Workload& w, std::string_view comm_type) {
  if (w.mask.kind != MaskKind::kWindow) return "";
  return "TransformerEngine runs sliding-window attention with cp_comm_type a2a or all_gather "
         "only, not " +
         std::string(comm_type);
}

std::string YunchangMask(const Workload& w) { return CausalOrFull(w, "its rings"); }

std::string YunchangRing(const SchemeParams& p, const Workload& w) {
  if (p.layout == Layout::kBalanced) return "its rings have no balanced layout";
  if (p.layout != Layout::kContiguous && w.mask.kind != MaskKind::kCausal)
    return "its zigzag and strip rings are causal only";
  return NoForwardCache(p, w);
}

std::string InternEvoDegrees(const FrameworkJob& job) {
  if (job.tp == 1) return "";
  return "its tensor.size is the sequence-parallel degree under mode \"isp\" (which 2D-Attention "
         "extends), so it runs no tensor parallelism beside the sequence's; --tp " +
         std::to_string(job.tp) + " x CP " + std::to_string(job.cp_gpus) +
         " has no InternEvo config (plan with --tp 1: tensor.size is then the context-parallel "
         "group, and parallel.weight shards the weights)";
}

}  // namespace framework_rules

FrameworkRun MegatronRun(const Workload& workload, const FrameworkJob& job,
                         std::string_view comm_type, std::string comm_flags) {
  FrameworkRun run;
  run.comm_type = std::string(comm_type);
  run.comm_flags = std::move(comm_flags);
  run.settings = MegatronLine(workload, job, {run.comm_type}, run.comm_flags);
  return run;
}

std::string MegatronLine(const Workload& workload, const FrameworkJob& job,
                         const std::vector<std::string>& comm_types,
                         const std::string& comm_flags) {
  std::string line = "--tensor-model-parallel-size " + std::to_string(job.tp);
  if (job.tp > 1) line += " --sequence-parallel";
  line += " --context-parallel-size " + std::to_string(job.cp_gpus) + " --cp-comm-type";
  for (const std::string& type : comm_types) line += " " + type;
  if (!comm_flags.empty()) line += " " + comm_flags;
  return line + " --seq-length " + std::to_string(workload.seq_len);
}

namespace {

// The ranks of one context-parallel group as meshplan lays the job out (TP innermost, then CP,
// DP outermost), for DP replica d and TP rank t, as a Python list expression.
std::string SequenceGroupExpr(const FrameworkJob& job) {
  const int64_t group = job.tp * job.cp_gpus;
  std::string expr = "[";
  if (job.dp > 1) expr += "d*" + std::to_string(group) + " + ";
  return expr + "t + " + std::to_string(job.tp) + "*i for i in range(" +
         std::to_string(job.cp_gpus) + ")]";
}

// Process groups built by hand for a sequence group spread over TP groups: yunchang's
// set_seq_parallel_pg takes consecutive ranks, which would be the TP group's.
std::string YunchangGroupsByHand(int64_t ulysses, int64_t ring, bool ulysses_low,
                                 const FrameworkJob& job) {
  const std::string u = std::to_string(ulysses), r = std::to_string(ring);
  const std::string inner = ulysses_low ? u : r, outer = ulysses_low ? r : u;
  const std::string inner_name = ulysses_low ? "ULYSSES_PG" : "RING_PG";
  const std::string outer_name = ulysses_low ? "RING_PG" : "ULYSSES_PG";
  std::string loops = "for t in range(" + std::to_string(job.tp) + ")";
  if (job.dp > 1) loops = "for d in range(" + std::to_string(job.dp) + ") " + loops;
  return "not set_seq_parallel_pg (it groups consecutive ranks, which are one TP group's): " +
         loops + ": sp = " + SequenceGroupExpr(job) + "; torch.distributed.new_group(sp[j*" +
         inner + ":(j+1)*" + inner + "]) for j in range(" + outer +
         ") and new_group(sp[k::" + inner + "]) for k in range(" + inner +
         "); set yunchang.globals.PROCESS_GROUP." + inner_name +
         " to this rank's first kind and PROCESS_GROUP." + outer_name + " to its second";
}

}  // namespace

std::string YunchangSettings(int64_t ulysses, int64_t ring, bool ulysses_low, Layout layout,
                             const FrameworkJob& job) {
  const char* impl = layout == Layout::kContiguous ? "basic"
                     : layout == Layout::kStriped  ? "strip"
                                                   : "zigzag";
  const int64_t sp = ulysses * ring;
  std::string groups;
  std::string sp_rank = "rank", sp_size = "world_size";
  if (job.tp > 1) {
    groups = YunchangGroupsByHand(ulysses, ring, ulysses_low, job);
    sp_rank = "sp.index(rank)";
    sp_size = std::to_string(sp);
  } else {
    groups = "set_seq_parallel_pg(" + std::to_string(ulysses) + ", " + std::to_string(ring) +
             ", rank, world_size, use_ulysses_low=" + (ulysses_low ? "True" : "False") + ")";
    if (job.dp > 1) {
      sp_rank = "rank % " + std::to_string(sp);
      sp_size = std::to_string(sp);
    }
  }
  return groups + "; LongContextAttention(ring_impl_type=\"" + impl +
         "\"); inputs: EXTRACT_FUNC_DICT[\"" + impl + "\"](x, " + sp_rank + ", " + sp_size +
         ", rd=" + std::to_string(ring) + ", ud=" + std::to_string(ulysses) + ")";
}

}  // namespace meshplan::planner
