// `meshplan step`: the whole training step of a model on a Megatron-style job (TP x CP x DP x PP)
// around the context-parallel plan of its attention: step time, tokens/s and model TFLOP/s per
// GPU, the time and memory by part, and whether it fits (docs/training-step.md).
#include <memory>
#include <string>

#include "capacity/scale_topology.h"
#include "core/base/units.h"
#include "planner/schemes/registry.h"
#include "report/step/step_report.h"
#include "step/whole_step.h"
#include "tools/cli_common.h"
#include "tools/commands.h"

namespace meshplan::tools {
namespace {

struct StepFlags {
  TopologyFlag topology;
  std::string model;
  std::string gpus;  // "": the cluster's own size
  std::string seq = "128K";
  step::StepOptions options;
  int64_t cp = 0;            // 0: what TP x DP x PP leave of the GPUs
  std::string global_batch;  // "": one micro-batch per DP rank
  std::string gemm_dtype = "bf16";
  std::string recompute = "auto";
  std::string framework = "any";
  std::string schemes;
  double reserve_gib = 4;
  std::string format = "text";
  std::string out;
  bool quiet = false;
  bool search = false;              // --search: the degrees not given are searched
  step::FixedDegrees given;         // the degrees given on the command line (0: not given)
  int top = 10;                     // --top: configurations listed by a search
  bool compare_frameworks = false;  // --compare-frameworks: each framework's best beside it
};

// `result`, its error prefixed by the flag it came from.
template <typename T>
Result<T> Named(Result<T> result, const std::string& flag) {
  if (!result.ok()) return result.status().WithContext(flag);
  return result;
}

Result<step::StepRequest> MakeStepRequest(const StepFlags& f) {
  step::StepRequest r;
  if (f.model.empty())
    return Status::Invalid("--model: required (a shipped name or a config.json)");
  MESHPLAN_ASSIGN_OR_RETURN(r.model, LoadModelConfig(f.model));
  MESHPLAN_RETURN_IF_ERROR(r.model.RequireWholeModel().WithContext("--model"));
  MESHPLAN_ASSIGN_OR_RETURN(r.seq, Named(ParseCount(f.seq), "--seq"));
  MESHPLAN_ASSIGN_OR_RETURN(r.framework, planner::ParseFramework(f.framework));
  if (std::string why = planner::FrameworkUnsupported(r.framework); !why.empty())
    return Status::Invalid(why);
  for (const std::string& name : SplitList(f.schemes)) {
    auto scheme = planner::ParseScheme(name);
    if (!scheme.ok()) return scheme.status().WithContext("--schemes");
    r.search.schemes.push_back(*scheme);
  }
  MESHPLAN_ASSIGN_OR_RETURN(Topology cluster, f.topology.Load());
  if (!f.gpus.empty()) {
    MESHPLAN_ASSIGN_OR_RETURN(const int64_t gpus, Named(ParseCount(f.gpus), "--gpus"));
    MESHPLAN_ASSIGN_OR_RETURN(cluster, Named(capacity::ScaleTopology(cluster, gpus), "--gpus"));
  }
  r.options = f.options;
  if (!f.global_batch.empty()) {
    MESHPLAN_ASSIGN_OR_RETURN(r.options.global_batch,
                              Named(ParseCount(f.global_batch), "--global-batch"));
  }
  MESHPLAN_ASSIGN_OR_RETURN(r.options.gemm_dtype, ParseDType(f.gemm_dtype));
  if (r.options.gemm_dtype != DType::kBf16 && r.options.gemm_dtype != DType::kFp8)
    return Status::Invalid("--gemm-dtype: expected bf16 or fp8, got " + f.gemm_dtype);
  r.recompute_auto = f.recompute == "auto";
  if (!r.recompute_auto) {
    MESHPLAN_ASSIGN_OR_RETURN(r.options.recompute, step::ParseRecompute(f.recompute));
  }
  MESHPLAN_RETURN_IF_ERROR(CheckReserveGiB(f.reserve_gib).WithContext("--reserve-gib"));
  r.options.reserve_bytes = f.reserve_gib * kGiB;
  const int64_t others = f.options.tp * f.options.dp * f.options.pp;
  if (f.search) {
    r.options.cp = 1;  // each configuration sets its own
  } else if (f.cp > 0) {
    r.options.cp = f.cp;
  } else if (others > 0 && cluster.num_gpus() % others == 0) {
    r.options.cp = cluster.num_gpus() / others;
  } else {
    return Status::Invalid("--gpus: " + std::to_string(cluster.num_gpus()) +
                           " GPUs do not split into TP x DP x PP = " + std::to_string(others) +
                           " x CP");
  }
  r.cluster = std::move(cluster);
  return r;
}

int RunStep(const StepFlags& f) {
  if (Status s = CheckFormat(f.format, {"text", "json"}); !s.ok()) return ReportError(s);
  if (f.compare_frameworks && (!f.search || f.format == "json"))
    return ReportError(Status::Invalid("--compare-frameworks: only with --search and text output"));
  if (!f.out.empty()) {
    if (Status s = CheckWritableOutput(f.out); !s.ok()) return ReportError(s);
  }
  auto request = MakeStepRequest(f);
  if (!request.ok()) return ReportError(request.status());
  if (f.search) {
    auto search = step::SearchStepConfigs(*request, f.given);
    if (!search.ok()) return ReportError(search.status());
    if (search->ranked.empty()) {
      return ReportError(Status::Invalid("--search: no configuration of " +
                                         std::to_string(request->cluster.num_gpus()) +
                                         " GPUs has a plan (" + std::to_string(search->candidates) +
                                         " allowed by the degrees, heads and batch)"));
    }
    if (f.format == "json") return EmitReport(f.out, report::StepSearchJson(*search), f.quiet);
    // The ranking, then the best configuration's whole report.
    step::StepRequest best = *request;
    best.options = search->ranked.front().options;
    auto answer = step::AnswerStep(best);
    if (!answer.ok()) return ReportError(answer.status());
    std::string text = report::StepSearchText(*search, f.top);
    if (f.compare_frameworks) {
      auto comparison = step::CompareFrameworks(*request, f.given);
      if (!comparison.ok()) return ReportError(comparison.status());
      text += "\nby framework (each one's best, beside the best over every plan):\n" +
              report::FrameworkComparisonText(*comparison);
    }
    return EmitReport(f.out, text + "\nthe best:\n" + report::StepText(best, *answer), f.quiet);
  }
  auto answer = step::AnswerStep(*request);
  if (!answer.ok()) return ReportError(answer.status());
  const std::string text = f.format == "json" ? report::StepJson(*request, *answer)
                                              : report::StepText(*request, *answer);
  return EmitReport(f.out, text, f.quiet);
}

}  // namespace

Runner RegisterStepCommand(CLI::App& app) {
  auto flags = std::make_shared<StepFlags>();
  CLI::App* cmd = app.add_subcommand(
      "step",
      "Time a whole training step (TP x CP x DP x PP, GEMMs, collectives, pipeline, optimizer) "
      "around the best context-parallel plan, with the whole model's memory");
  flags->topology.Register(*cmd);
  flags->topology.quiet = &flags->quiet;
  cmd->add_option("--model", flags->model,
                  "Model: a shipped name (models/) or a Hugging Face config.json (required)");
  cmd->add_option("--gpus", flags->gpus,
                  "GPUs of the job: the cluster grown or shrunk to this many (default: the "
                  "cluster's own size)");
  cmd->add_option("--seq", flags->seq, "Tokens per sequence, e.g. 128K or 1M")
      ->capture_default_str();
  cmd->add_option("--tp", flags->options.tp, "Tensor-parallel degree (with sequence parallelism)")
      ->capture_default_str();
  cmd->add_option("--cp", flags->cp,
                  "Context-parallel degree (default: the GPUs that TP x DP x PP leave)");
  cmd->add_option("--dp", flags->options.dp, "Data-parallel degree")->capture_default_str();
  cmd->add_option("--pp", flags->options.pp, "Pipeline stages (1F1B)")->capture_default_str();
  cmd->add_option("--vpp", flags->options.vpp, "Virtual stages per pipeline rank (interleaved)")
      ->capture_default_str();
  cmd->add_option("--micro-batch", flags->options.micro_batch, "Sequences per micro-batch")
      ->capture_default_str();
  cmd->add_option("--global-batch", flags->global_batch,
                  "Sequences per step (default: one micro-batch per DP rank)");
  cmd->add_option("--gemm-dtype", flags->gemm_dtype,
                  "GEMM precision: bf16, or fp8 (TransformerEngine's recipe; attention stays bf16)")
      ->capture_default_str();
  cmd->add_option("--recompute", flags->recompute,
                  "Activation recompute: none, selective (core attention), full, or auto (none, "
                  "else full when none does not fit)")
      ->capture_default_str();
  cmd->add_flag("--grad-reduce-in-bf16", flags->options.grad_reduce_bf16,
                "Gradients kept and reduced in bf16 (Megatron's --grad-reduce-in-bf16), not fp32");
  cmd->add_flag("--tp-comm-overlap", flags->options.tp_comm_overlap,
                "TP collectives overlapped with the GEMMs (TransformerEngine's userbuffers)");
  cmd->add_flag("--no-overlap-p2p-comm{false}", flags->options.overlap_p2p_comm,
                "Pipeline sends not overlapped with the next chunk's compute under --vpp > 1 "
                "(Megatron's --no-overlap-p2p-communication; overlapped by default)");
  cmd->add_option("--framework", flags->framework,
                  "The attention plan must run in: megatron, yunchang, internevo or any")
      ->capture_default_str();
  cmd->add_option(
      "--schemes", flags->schemes,
      "Comma-separated CP schemes to consider (default all): " + planner::SchemeNamesText());
  cmd->add_option("--reserve-gib", flags->reserve_gib,
                  "GPU memory (GiB) held back for the CUDA context, NCCL and fragmentation")
      ->capture_default_str();
  cmd->add_option("--format", flags->format, "Output: text or json")->capture_default_str();
  cmd->add_option("--out,-o", flags->out, "Write the report to this file");
  cmd->add_flag("--quiet,-q", flags->quiet, "Nothing on stderr but errors");
  cmd->add_flag("--search", flags->search,
                "Search the degrees not given (TP x CP x DP x PP, recompute) for the fastest step "
                "that fits; needs --global-batch");
  cmd->add_option("--top", flags->top, "Configurations a search lists (0: all)")
      ->capture_default_str();
  cmd->add_flag("--compare-frameworks", flags->compare_frameworks,
                "With --search: each framework's best configuration beside the best over every "
                "plan, and why each cannot run the latter");
  return [cmd, flags] {
    StepFlags f = *flags;
    f.given.tp = cmd->count("--tp") > 0 ? f.options.tp : 0;
    f.given.pp = cmd->count("--pp") > 0 ? f.options.pp : 0;
    f.given.dp = cmd->count("--dp") > 0 ? f.options.dp : 0;
    f.given.cp = f.cp;
    return RunStep(f);
  };
}

}  // namespace meshplan::tools
