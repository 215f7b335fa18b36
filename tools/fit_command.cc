// `meshplan fit`: the longest sequence each scheme fits in memory on a cluster, or, with a step
// time budget, the smallest cluster that runs a sequence within it (docs/capacity-planning.md).
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "capacity/fit.h"
#include "core/base/atomic_file.h"
#include "core/base/units.h"
#include "planner/schemes/registry.h"
#include "report/capacity/fit_report.h"
#include "tools/cli_common.h"
#include "tools/commands.h"
#include "tools/planning_flags.h"

namespace meshplan::tools {
namespace {

struct FitFlags {
  WorkloadFlags workload;
  TopologyFlag topology;
  ParallelFlags parallel;  // --tp, --dp
  PlanningFlags planning;  // --framework, --seq-round
  std::string schemes;
  double reserve_gib = 0;
  std::string max_seq = "1G";
  double budget_s = 0;
  std::string max_gpus = "4096";
  std::string format = "table";
  std::string out;     // --out: the report to this file (written whole, atomically)
  bool quiet = false;  // -q: no notes on stderr
};

// The report where the flags say: stdout, or --out written atomically (with a line on stderr).
int WriteFitReport(const FitFlags& flags, const std::string& text) {
  return EmitReport(flags.out, text, flags.quiet);
}

int RunLongestFit(const FitFlags& flags, const planner::PlanRequest& request) {
  auto max_seq = ParseCount(flags.max_seq);
  if (!max_seq.ok()) return ReportError(max_seq.status().WithContext("--max-seq"));
  auto fits = capacity::LongestFittingSequence(request, *max_seq);
  if (!fits.ok()) return ReportError(fits.status());
  const Topology& topology = request.topology;
  const Workload& workload = request.workload;
  const double reserved = request.reserved_bytes;
  const std::string text =
      flags.format == "json"
          ? report::LongestFitJson(topology, workload, reserved, *max_seq, *fits)
          : report::LongestFitTable(topology, workload, reserved, *max_seq, *fits);
  return WriteFitReport(flags, text);
}

int RunSmallestCluster(const FitFlags& flags, const planner::PlanRequest& request) {
  auto max_gpus = ParseCount(flags.max_gpus);
  if (!max_gpus.ok()) return ReportError(max_gpus.status().WithContext("--max-gpus"));
  // With a model the budget covers all its attention layers, shared evenly (report::TimeBudget).
  report::TimeBudget budget;
  budget.seconds = flags.budget_s;
  if (request.model) {
    budget.layers = request.model->layers;
    budget.model = request.model->name;
  }
  auto found = capacity::SmallestClusterFor(request, budget.per_layer_s(), *max_gpus);
  if (!found.ok()) return ReportError(found.status());
  const Workload& workload = request.workload;
  const std::string text =
      flags.format == "json"
          ? report::SmallestClusterJson(workload, budget, *found)
          : report::SmallestClusterTable(workload, request.reserved_bytes, budget, *found);
  return WriteFitReport(flags, text);
}

// The flags that belong to one of fit's two questions (with --budget-s or without).
Status CheckFitMode(const FitFlags& flags, const CLI::App& cmd) {
  const bool budget_mode = cmd.count("--budget-s") > 0;
  if (budget_mode && !(flags.budget_s > 0 && std::isfinite(flags.budget_s)))
    return Status::Invalid("--budget-s: must be positive and finite (seconds)");
  if (!budget_mode && cmd.count("--max-gpus") > 0)
    return Status::Invalid("--max-gpus: only applies with --budget-s");
  if (budget_mode && cmd.count("--seq") == 0)
    return Status::Invalid("--budget-s: needs --seq, the sequence length to run within the budget");
  if (!budget_mode && cmd.count("--seq") > 0) {
    return Status::Invalid(
        "--seq: only applies with --budget-s (without it, fit finds the longest sequence)");
  }
  if (!budget_mode && cmd.count("--seq-round") > 0) {
    return Status::Invalid(
        "--seq-round: only applies with --budget-s (fit's lengths are multiples of 2 x GPUs)");
  }
  if (budget_mode && cmd.count("--max-seq") > 0)
    return Status::Invalid("--max-seq: does not apply with --budget-s (--seq gives the sequence)");
  return Status::Ok();
}

// The checks of fit's own flags, before any planning.
Status CheckFitFlags(const FitFlags& flags, const CLI::App& cmd) {
  MESHPLAN_RETURN_IF_ERROR(CheckFormat(flags.format, {"table", "json"}));
  if (!flags.out.empty())
    MESHPLAN_RETURN_IF_ERROR(CheckWritableOutput(flags.out).WithContext("--out"));
  MESHPLAN_RETURN_IF_ERROR(CheckReserveGiB(flags.reserve_gib).WithContext("--reserve-gib"));
  return CheckFitMode(flags, cmd);
}

int RunFit(const FitFlags& flags, const CLI::App& cmd) {
  if (Status st = CheckFitFlags(flags, cmd); !st.ok()) return ReportError(st);
  // Without a budget the sequence is what `fit` finds; --seq's default stands in for it.
  auto request = MakePlanRequest(flags.workload, flags.topology, flags.parallel.degrees,
                                 flags.planning, flags.schemes, flags.reserve_gib);
  if (!request.ok()) return ReportError(request.status());
  return cmd.count("--budget-s") > 0 ? RunSmallestCluster(flags, *request)
                                     : RunLongestFit(flags, *request);
}

}  // namespace

Runner RegisterFitCommand(CLI::App& app) {
  auto flags = std::make_shared<FitFlags>();
  CLI::App* cmd = app.add_subcommand("fit",
                                     "Longest sequence each scheme fits in memory, or (--budget-s) "
                                     "the smallest cluster meeting a time budget");
  flags->topology.Register(*cmd);
  flags->topology.quiet = &flags->quiet;
  flags->workload.Register(*cmd);
  flags->parallel.Register(*cmd);
  flags->planning.Register(*cmd);
  // No default shown: --budget-s needs an explicit --seq, and without a budget fit finds the
  // length.
  cmd->get_option("--seq")
      ->description(
          "Sequence length to run within --budget-s (required with it; without it, fit finds the "
          "longest)")
      ->default_str("");
  cmd->add_option("--schemes", flags->schemes,
                  "Comma-separated schemes (default all): " + planner::SchemeNamesText() +
                      " (meshplan plan --list-schemes)");
  cmd->add_option("--reserve-gib", flags->reserve_gib,
                  "GPU memory (GiB) held back for weights, optimizer state and other activations")
      ->capture_default_str();
  cmd->add_option("--max-seq", flags->max_seq, "Longest sequence to try")->capture_default_str();
  cmd->add_option(
      "--budget-s", flags->budget_s,
      "Time budget in seconds for one attention layer's --pass, or with --model for all the "
      "model's attention layers in one training step: find the smallest cluster that runs --seq "
      "within it");
  cmd->add_option("--max-gpus", flags->max_gpus, "Largest cluster to try with --budget-s")
      ->capture_default_str();
  cmd->add_option("--format", flags->format, "Output: table or json")->capture_default_str();
  cmd->add_option("--out,-o", flags->out, "Write the report to this file instead of stdout");
  cmd->add_flag("--quiet,-q", flags->quiet, "No notes on stderr");
  return [cmd, flags] { return RunFit(*flags, *cmd); };
}

}  // namespace meshplan::tools
