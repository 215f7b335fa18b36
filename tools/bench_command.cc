// `meshplan bench`: the executor over schemes x masks x sequence lengths (capacity/bench.h), as a
// table, CSV or JSON of TFLOP/s per rank and peak memory, measured next to predicted, plus SVG
// charts (report/runs/bench_report.h); docs/benchmarks.md.
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "capacity/bench.h"
#include "capacity/sweep_lists.h"
#include "core/base/atomic_file.h"
#include "core/base/units.h"
#include "executor/host_memory.h"
#include "planner/schemes/registry.h"
#include "report/runs/bench_report.h"
#include "tools/cli_common.h"
#include "tools/commands.h"
#include "tools/execute_run.h"
#include "tools/planning_flags.h"
#include "tools/progress_bar.h"

namespace meshplan::tools {
namespace {

struct BenchFlags {
  std::string topology = "dgx-h100-4gpu";
  ModelFlags model;
  std::string schemes;
  WorkloadFlags workload;  // --seq and --mask hold lists here
  ParallelFlags parallel;  // --tp, --dp
  PlanningFlags planning;  // --framework, --seq-round
  ExecuteFlags run;  // backend, transport, dtype, kernels, devices, seed, repeat, timeouts, memory
  std::string format = "table";
  std::string out;
  std::string charts;
  bool quiet = false;
};

Result<std::vector<capacity::BenchMask>> ParseMasks(const std::string& text) {
  std::vector<capacity::BenchMask> masks;
  for (const std::string& item : SplitList(text)) {
    auto mask = ParseMask(item);
    if (!mask.ok()) return mask.status().WithContext("--mask");
    masks.push_back({item, *mask});
  }
  if (masks.empty()) return Status::Invalid("--mask: no masks given");
  return masks;
}

// Flags into a bench: every flag is checked before anything runs.
Result<capacity::BenchSpec> MakeSpec(BenchFlags& flags, report::BenchContext* context) {
  MESHPLAN_RETURN_IF_ERROR(CheckFormat(flags.format, {"table", "csv", "json"}));
  if (flags.run.transport.empty())
    flags.run.transport = flags.run.backend == "cuda" ? "local" : "threads";
  if (flags.run.transport == "mpi") {
    return Status::Invalid(
        "--transport: mpi is not available to bench (every rank runs in this process; use "
        "meshplan execute --transport mpi for one plan)");
  }
  MESHPLAN_RETURN_IF_ERROR(CheckFlags(flags.run));
  if (!flags.out.empty())
    MESHPLAN_RETURN_IF_ERROR(CheckWritableOutput(flags.out).WithContext("--out"));
  if (!flags.charts.empty())
    MESHPLAN_RETURN_IF_ERROR(CheckOutputDirectory(flags.charts).WithContext("--plot"));
  capacity::BenchSpec spec;
  auto topology = LoadTopologyFlag(flags.topology);
  if (!topology.ok()) return topology.status();
  spec.topology = std::move(topology).value();
  MESHPLAN_RETURN_IF_ERROR(flags.model.Apply(spec.topology));
  MESHPLAN_ASSIGN_OR_RETURN(auto fields,
                            flags.workload.FieldsWithModel([](const std::string& flag) {
                              return flag != "--seq" && flag != "--mask";
                            }));
  spec.base = fields.ApplyTo(Workload::Default());
  MESHPLAN_ASSIGN_OR_RETURN(auto seq, capacity::ParseCountList(flags.workload.seq, "--seq"));
  spec.seq_lens = seq;
  MESHPLAN_ASSIGN_OR_RETURN(spec.model, flags.workload.Model());
  spec.degrees = flags.parallel.degrees;
  spec.partial_dtype_given = flags.workload.Given("--partial-dtype");
  spec.attention_kernel_given = !flags.model.attention_kernel.empty();
  planner::PlanRequest request;
  MESHPLAN_RETURN_IF_ERROR(flags.planning.ApplyTo(&request));
  if (std::string why = planner::FrameworkUnsupported(request.framework); !why.empty())
    return Status::Invalid(why);
  spec.framework = request.framework;
  spec.seq_rounding = request.seq_rounding;
  auto masks = ParseMasks(flags.workload.mask);
  if (!masks.ok()) return masks.status();
  spec.masks = *masks;
  if (!flags.schemes.empty()) {
    auto schemes = capacity::ParseSchemeList(SplitList(flags.schemes), "--schemes");
    if (!schemes.ok()) return schemes.status();
    spec.schemes = *schemes;
  }
  spec.repeat = RepeatCount(flags.run).value();
  spec.seed = flags.run.seed;
  spec.config.run.recv_timeout = Timeout(flags.run);
  // One context-parallel group's GPUs are the ranks (all of them without --tp and --dp).
  MESHPLAN_ASSIGN_OR_RETURN(Topology group, ContextParallelCluster(spec.topology, spec.degrees));
  const int64_t ranks = group.num_gpus();
  std::string run_line = "backend cpu, transport threads, " + std::to_string(ranks) +
                         " ranks (one engine per rank, a worker thread per stream)";
  if (flags.run.backend == "cuda") {
    Prepared prepared;
    Plan plan;
    plan.workload = spec.base;
    MESHPLAN_RETURN_IF_ERROR(PrepareCuda(flags.run, plan, &prepared));
    spec.config = prepared.config;
    spec.config.run.recv_timeout = Timeout(flags.run);
    run_line = "backend cuda, transport " + flags.run.transport + ", " + std::to_string(ranks) +
               " ranks; " + prepared.precision;
  }
  MESHPLAN_ASSIGN_OR_RETURN(auto budget, HostBudgetOf(flags.run, ranks));
  spec.memory_limit_bytes = budget.limit_bytes;
  spec.memory_limit_source = budget.limit_source;
  Workload shown = spec.base;
  context->topology =
      spec.topology.name + " (" + std::to_string(ranks) + " x " + spec.topology.gpu.model + ")";
  context->run = run_line;
  context->base = spec.base;
  context->workload =
      "batch " + std::to_string(shown.batch) + ", " + std::to_string(shown.q_heads) + "/" +
      std::to_string(shown.kv_heads) + " heads of " + std::to_string(shown.head_dim) + ", " +
      std::string(DTypeName(shown.dtype)) + ", " + std::string(PassName(shown.pass));
  context->repeat = spec.repeat;
  return spec;
}

int RunBenchCommand(BenchFlags& flags) {
  report::BenchContext context;
  auto spec = MakeSpec(flags, &context);
  if (!spec.ok()) return ReportError(spec.status());
  capacity::BenchProgress progress;
  // A line per point (its outcome is worth keeping); on a terminal, above a bar with the time left.
  auto bar = std::make_shared<ProgressBar>("bench");
  if (!flags.quiet) {
    progress = [bar](const capacity::BenchRow& row, int64_t done, int64_t total) {
      std::string what = std::string(capacity::BenchOutcomeName(row.outcome));
      if (row.outcome == capacity::BenchOutcome::kRan)
        what += " in " + FormatSeconds(row.median_s) + " (median)";
      bar->Update(done, total);
      bar->Print("meshplan: bench: " + std::to_string(done) + "/" + std::to_string(total) + " " +
                 row.mask + " " + FormatCount(row.seq_len) + " " +
                 std::string(SchemeName(row.scheme)) + ": " + what);
    };
  }
  auto rows = capacity::RunBench(*spec, progress);
  progress = {};
  bar.reset();  // erased before the table reaches the terminal
  if (!rows.ok()) return ReportError(rows.status());
  const std::string text = flags.format == "json"  ? report::BenchJson(*rows, context)
                           : flags.format == "csv" ? report::BenchCsv(*rows)
                                                   : report::RenderBenchTable(*rows, context);
  if (flags.out.empty()) {
    std::fputs(text.c_str(), stdout);
  } else if (Status st = WriteFileAtomically(flags.out, text); !st.ok()) {
    return ReportError(st);
  }
  if (!flags.charts.empty()) {
    if (Status st = report::WriteBenchCharts(*rows, flags.charts); !st.ok()) return ReportError(st);
  }
  int failed = 0;
  for (const capacity::BenchRow& row : *rows)
    failed += row.outcome == capacity::BenchOutcome::kFailed;
  if (failed > 0) {
    std::fprintf(stderr, "meshplan: error: bench: %d point%s failed (see the table's notes)\n",
                 failed, failed == 1 ? "" : "s");
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace

Runner RegisterBenchCommand(CLI::App& app) {
  auto flags = std::make_shared<BenchFlags>();
  flags->workload.seq = "1K,2K";
  flags->workload.mask = "full,causal";
  flags->workload.heads = "8";
  flags->workload.kv_heads = "4";
  flags->workload.head_dim = "32";
  flags->run.repeat = "3";
  CLI::App* cmd =
      app.add_subcommand("bench",
                         "Run every scheme's best plan over masks x sequence lengths for real and "
                         "report TFLOP/s per rank and peak "
                         "memory, measured next to predicted (table, CSV, JSON, SVG charts)");
  cmd->add_option(
         "--topology,-t", flags->topology,
         "Cluster the plans are made and predicted on, every GPU a rank: a TOML file (e.g. from "
         "meshplan calibrate) or a shipped cluster's name")
      ->capture_default_str();
  flags->model.Register(*cmd);
  cmd->add_option("--schemes", flags->schemes,
                  "Comma-separated schemes (default: every scheme with a valid plan): " +
                      planner::SchemeNamesText() + " (meshplan plan --list-schemes)");
  flags->workload.Register(*cmd);
  flags->parallel.Register(*cmd);
  flags->planning.Register(*cmd);
  cmd->get_option("--seq")->description(
      "Sequence lengths: list and ranges, e.g. 1K,2K,4K or 1K..16K (doubling)");
  cmd->get_option("--mask")->description(
      "Masks, comma-separated: full, causal, window:W, docs:FILE");
  cmd->add_option(
         "--repeat", flags->run.repeat,
         "Timed runs per point (1 to 1000; one untimed warm-up run first when more than 1)")
      ->capture_default_str();
  cmd->add_option("--seed", flags->run.seed, "Seed of the random inputs (generated per rank)")
      ->capture_default_str();
  cmd->add_option("--backend", flags->run.backend, "cpu, or cuda (GPU kernels)")
      ->capture_default_str();
  cmd->add_option("--transport", flags->run.transport,
                  "cpu: threads (default); cuda: local (default) or nccl");
  cmd->add_option("--kernels", flags->run.kernels, "cuda: auto, cudnn, tensor or simt")
      ->capture_default_str();
  cmd->add_option("--devices", flags->run.devices,
                  "cuda, transport local: GPUs the ranks spread over (0: all)")
      ->capture_default_str();
  cmd->add_option("--timeout-s", flags->run.timeout_s,
                  "A receive waiting longer than this fails the point (s)")
      ->capture_default_str();
  cmd->add_option(
      "--max-memory", flags->run.max_memory,
      "Host memory a point may use (e.g. 16G); points that need more are skipped, saying why "
      "(default: the memory available now)");
  cmd->add_option("--format", flags->format, "Output: table, csv or json")->capture_default_str();
  cmd->add_option("--out,-o", flags->out, "Write the output to this file instead of stdout");
  // --plot as on sweep; --charts, its first name, still works for a release (hidden from --help).
  cmd->add_option("--plot", flags->charts,
                  "Write SVG charts (TFLOP/s and peak memory per rank vs sequence length, one per "
                  "mask) into this directory");
  cmd->add_option("--charts", flags->charts, "The old name of --plot")->group("");
  cmd->add_flag("--quiet,-q", flags->quiet, "No progress messages on stderr");
  return [flags] { return RunBenchCommand(*flags); };
}

}  // namespace meshplan::tools
