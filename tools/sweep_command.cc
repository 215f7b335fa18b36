// `meshplan sweep`: the planner (and optionally the simulator) over GPU counts, sequence lengths,
// topologies and schemes, one CSV/JSON row per point and scheme (docs/capacity-planning.md).
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "capacity/sweep.h"
#include "capacity/sweep_file.h"
#include "capacity/sweep_lists.h"
#include "capacity/sweep_settings.h"
#include "core/base/atomic_file.h"
#include "core/base/units.h"
#include "planner/schemes/registry.h"
#include "report/capacity/charts.h"
#include "report/capacity/sweep_table.h"
#include "tools/cli_common.h"
#include "tools/commands.h"
#include "tools/interrupt_request.h"
#include "tools/planning_flags.h"
#include "tools/progress_bar.h"

namespace meshplan::tools {
namespace {

struct SweepFlags {
  std::vector<std::string> topologies;  // repeatable and comma-separated
  ModelFlags model;
  std::string gpus;
  std::string tps;         // --tp: a list of TP degrees
  int64_t dp = 1;          // --dp
  PlanningFlags planning;  // --framework, --seq-round
  std::string schemes;
  WorkloadFlags workload;  // --seq holds a list here
  double reserve_gib = 0;
  bool simulate = false;
  std::string format;  // "": table on a terminal without --out, else csv
  std::string out;
  std::string sweep_file;
  std::string plot;  // directory for the SVG charts
  bool quiet = false;
  std::string max_memory;  // --max-memory: host memory each replay may use
};

// True when `flag` was given on the command line.
using GivenFlag = std::function<bool(const std::string& flag)>;

// The list flags given (--gpus, --seq, --tp) into `s`.
Status GivenLists(const SweepFlags& flags, const GivenFlag& given, capacity::SweepSettings& s) {
  const std::pair<const char*, std::pair<const std::string*, std::optional<std::vector<int64_t>>*>>
      lists[] = {{"--gpus", {&flags.gpus, &s.gpus}},
                 {"--seq", {&flags.workload.seq, &s.seq_lens}},
                 {"--tp", {&flags.tps, &s.tps}}};
  for (const auto& [flag, list] : lists) {
    if (!given(flag)) continue;
    MESHPLAN_ASSIGN_OR_RETURN(*list.second, capacity::ParseCountList(*list.first, flag));
  }
  return Status::Ok();
}

// The planning flags given (--dp, --framework, --seq-round, --model, --schemes, --reserve-gib)
// into `s`.
Status GivenPlanning(const SweepFlags& flags, const GivenFlag& given, capacity::SweepSettings& s) {
  if (given("--dp")) s.dp = flags.dp;
  planner::PlanRequest request;
  MESHPLAN_RETURN_IF_ERROR(flags.planning.ApplyTo(&request));
  if (given("--framework")) s.framework = request.framework;
  if (given("--seq-round")) s.seq_rounding = request.seq_rounding;
  MESHPLAN_ASSIGN_OR_RETURN(auto model, flags.workload.Model());
  if (model) s.model = std::move(model);
  if (given("--schemes")) {
    MESHPLAN_ASSIGN_OR_RETURN(s.schemes,
                              capacity::ParseSchemeList(SplitList(flags.schemes), "--schemes"));
  }
  if (given("--reserve-gib")) {
    MESHPLAN_RETURN_IF_ERROR(CheckReserveGiB(flags.reserve_gib).WithContext("--reserve-gib"));
    s.reserved_memory_bytes = flags.reserve_gib * kGiB;
  }
  return Status::Ok();
}

// The flags given on the command line as a layer of sweep settings (over the sweep file's).
Result<capacity::SweepSettings> GivenSettings(const SweepFlags& flags, const CLI::App& cmd) {
  const GivenFlag given = [&](const std::string& flag) { return cmd.count(flag) > 0; };
  capacity::SweepSettings s;
  if (given("--topology")) s.topology_files = flags.topologies;
  if (given("--attention-kernel")) s.attention_kernel = flags.model.attention_kernel;
  if (given("--step-overhead-ms")) s.step_overhead_ms = flags.model.step_overhead_ms;
  MESHPLAN_RETURN_IF_ERROR(GivenLists(flags, given, s));
  MESHPLAN_RETURN_IF_ERROR(GivenPlanning(flags, given, s));
  if (given("--simulate")) s.simulate = flags.simulate;
  // --seq is a list here, held by seq_lens.
  MESHPLAN_ASSIGN_OR_RETURN(
      s.workload, flags.workload.FieldsWithModel(
                      [&](const std::string& flag) { return flag != "--seq" && given(flag); }));
  for (const char* flag : {"--model", "--seq", "--batch", "--heads", "--kv-heads", "--head-dim",
                           "--dtype", "--partial-dtype", "--mask", "--pass"}) {
    if (given(flag)) s.workload_source = "the flags";
  }
  return s;
}

// The sweep file (if any), then every flag given on the command line over it.
Result<capacity::SweepSpec> MakeSpec(const SweepFlags& flags, const CLI::App& cmd) {
  capacity::SweepSettings settings;
  if (!flags.sweep_file.empty()) {
    MESHPLAN_ASSIGN_OR_RETURN(auto file, capacity::ReadSweepFile(flags.sweep_file));
    settings = std::move(file);
  }
  MESHPLAN_ASSIGN_OR_RETURN(auto given, GivenSettings(flags, cmd));
  settings.Overlay(given);
  return capacity::MakeSweepSpec(settings);
}

// Writes the rows where the flags say (stdout or --out); the place to add more outputs.
Status WriteSweepOutputs(const SweepFlags& flags, const std::vector<capacity::SweepRow>& rows) {
  const std::string text = flags.format == "json"    ? report::SweepJson(rows)
                           : flags.format == "table" ? report::SweepTextTable(rows)
                                                     : report::SweepCsv(rows);
  if (flags.out.empty()) {
    std::fputs(text.c_str(), stdout);
    return Status::Ok();
  }
  MESHPLAN_RETURN_IF_ERROR(WriteFileAtomically(flags.out, text));
  if (!flags.quiet)
    std::fprintf(stderr, "meshplan: wrote %zu rows to %s\n", rows.size(), flags.out.c_str());
  return Status::Ok();
}

// The output flags, before any planning.
Status CheckSweepOutputs(const SweepFlags& flags) {
  MESHPLAN_RETURN_IF_ERROR(CheckFormat(flags.format, {"csv", "json", "table"}));
  if (!flags.plot.empty())
    MESHPLAN_RETURN_IF_ERROR(CheckOutputDirectory(flags.plot).WithContext("--plot"));
  if (!flags.out.empty())
    MESHPLAN_RETURN_IF_ERROR(CheckWritableOutput(flags.out).WithContext("--out"));
  return Status::Ok();
}

// The flags' sweep, with the replays' memory limit and the checks that need the spec.
Result<capacity::SweepSpec> MakeCheckedSpec(const SweepFlags& flags, const CLI::App& cmd) {
  MESHPLAN_ASSIGN_OR_RETURN(capacity::SweepSpec spec, MakeSpec(flags, cmd));
  if (!flags.max_memory.empty() && !spec.simulate) {
    return Status::Invalid(
        "--max-memory: limits the replays of --simulate, which this sweep does not make");
  }
  if (spec.simulate) {
    sim::SimOptions replay;
    MESHPLAN_RETURN_IF_ERROR(SetReplayMemoryLimit(flags.max_memory, &replay));
    spec.replay_memory_limit_bytes = replay.memory_limit_bytes;
    spec.replay_memory_limit_source = replay.memory_limit_source;
  }
  if (!flags.plot.empty() && spec.tps.size() > 1) {
    return Status::Invalid(
        "--plot: the charts show one TP degree; sweep one --tp value at a time to plot");
  }
  return spec;
}

// The sweep's rows, with progress on stderr unless -q: on a terminal a bar with the time left
// (erased before the table reaches the terminal); elsewhere (logs, pipes) a line per point.
// Points done and in all, as the progress saw them.
struct SweepCount {
  int64_t done = 0, total = 0;
};

Result<std::vector<capacity::SweepRow>> RunWithProgress(const capacity::SweepSpec& spec, bool quiet,
                                                        const capacity::StopRequested& stop,
                                                        SweepCount* count) {
  capacity::Progress show;
  auto bar = std::make_shared<ProgressBar>("sweep");
  if (!quiet && bar->drawing()) {
    show = [bar](int64_t done, int64_t total) { bar->Update(done, total); };
  } else if (!quiet) {
    show = [](int64_t done, int64_t total) {
      std::fprintf(stderr, "meshplan: sweep: point %lld/%lld\n", static_cast<long long>(done),
                   static_cast<long long>(total));
      std::fflush(stderr);
    };
  }
  const capacity::Progress progress = [&show, count](int64_t done, int64_t total) {
    count->done = done;
    count->total = total;
    if (show) show(done, total);
  };
  auto rows = capacity::RunSweep(spec, progress, stop);
  show = {};
  bar.reset();
  return rows;
}

int RunSweepCommand(SweepFlags flags, const CLI::App& cmd) {
  // Rows of 17-digit CSV are for files and pipes; a person at a terminal gets the table.
  if (flags.format.empty())
    flags.format = flags.out.empty() && ::isatty(STDOUT_FILENO) != 0 ? "table" : "csv";
  if (Status st = CheckSweepOutputs(flags); !st.ok()) return ReportError(st);
  auto spec = MakeCheckedSpec(flags, cmd);
  if (!spec.ok()) return ReportError(spec.status());
  // Ctrl-C stops between points: the finished points' rows are still written (a second Ctrl-C
  // ends the process at once, as without a sweep).
  const InterruptRequest interrupt;
  SweepCount count;
  auto rows = RunWithProgress(
      *spec, flags.quiet, [&interrupt] { return interrupt.requested(); }, &count);
  if (!rows.ok()) return ReportError(rows.status());
  if (Status st = WriteSweepOutputs(flags, *rows); !st.ok()) return ReportError(st);
  if (!flags.plot.empty() && !rows->empty()) {
    if (Status st = report::WriteSweepPlots(*rows, flags.plot); !st.ok()) return ReportError(st);
  }
  if (interrupt.requested()) {
    std::fprintf(stderr,
                 "meshplan: sweep: interrupted (Ctrl-C) after %lld of %lld points; the finished "
                 "points' rows are %s\n",
                 static_cast<long long>(count.done), static_cast<long long>(count.total),
                 flags.out.empty() ? "on stdout" : ("in " + flags.out).c_str());
    return 128 + SIGINT;
  }
  return kExitOk;
}

}  // namespace

Runner RegisterSweepCommand(CLI::App& app) {
  auto flags = std::make_shared<SweepFlags>();
  CLI::App* cmd = app.add_subcommand("sweep",
                                     "Plan every point of a grid of GPU counts, sequence lengths, "
                                     "topologies and schemes (CSV/JSON)");
  cmd->add_option("--topology,-t", flags->topologies,
                  "Cluster TOML file(s) or shipped cluster name(s): repeat the flag or give a "
                  "comma list (default: built-in 32 x 8 H100)")
      ->delimiter(',');
  flags->model.Register(*cmd);
  cmd->add_option(
      "--gpus", flags->gpus,
      "GPU counts: list and ranges, e.g. 8,16,32 or 8..1024 (doubling) or 8..64:+8 (default: each "
      "topology's own size); the outermost network level is scaled");
  flags->workload.Register(*cmd);
  cmd->add_option("--tp", flags->tps,
                  "Tensor-parallel degrees beside context parallelism, a list or range like "
                  "--gpus (default 1): each point plans one CP group, heads divided (CSV/JSON "
                  "column tp)");
  cmd->add_option("--dp", flags->dp,
                  "Data-parallel replicas beside TP and CP: the cluster's outermost groups, each "
                  "running its own context-parallel groups")
      ->capture_default_str();
  flags->planning.Register(*cmd);
  cmd->get_option("--seq")->description(
      "Sequence lengths: list and ranges, e.g. 128K,1M or 128K..4M (doubling) or 64K..256K:+64K");
  cmd->add_option("--schemes", flags->schemes,
                  "Comma-separated schemes (default all): " + planner::SchemeNamesText() +
                      " (meshplan plan --list-schemes)");
  cmd->add_option("--reserve-gib", flags->reserve_gib,
                  "GPU memory (GiB) held back for weights, optimizer state and other activations")
      ->capture_default_str();
  cmd->add_flag("--simulate", flags->simulate,
                "Also replay each point's best plan per scheme in the simulator");
  cmd->add_option("--max-memory", flags->max_memory,
                  "With --simulate: host memory each replay may use (e.g. 16G); a point whose "
                  "replay is projected to need more ends the sweep with one line (default: the "
                  "memory available now)");
  cmd->add_option("--format", flags->format,
                  "Output: csv, json or table (aligned columns with units; the default when "
                  "standard output is a terminal and no --out is given, csv otherwise)");
  cmd->add_option("--out,-o", flags->out, "Write the rows to this file instead of stdout");
  cmd->add_option(
      "--plot", flags->plot,
      "Write SVG charts (time vs GPUs, communication share vs sequence length, best-scheme map) "
      "into this directory");
  cmd->add_option(
      "--sweep-file", flags->sweep_file,
      "TOML file with topologies, gpus, seq, schemes and workload keys (flags override it)");
  cmd->add_flag("--quiet,-q", flags->quiet, "No progress messages on stderr");
  return [cmd, flags] { return RunSweepCommand(*flags, *cmd); };
}

}  // namespace meshplan::tools
