// `meshplan simulate PLAN`: replay a plan file on a topology with the simulator and report the
// predicted timeline against the planner's estimate; optionally write a Chrome trace and an SVG
// timeline of the first ranks.
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "core/base/atomic_file.h"
#include "core/base/escape.h"
#include "core/base/units.h"
#include "planner/plan_file.h"
#include "report/capacity/charts.h"
#include "report/runs/simulation_report.h"
#include "report/svg/svg_plot.h"
#include "simulator/model_layers_replay.h"
#include "simulator/plan_simulation.h"
#include "simulator/trace.h"
#include "tools/cli_common.h"
#include "tools/commands.h"
#include "tools/progress_bar.h"

namespace meshplan::tools {
namespace {

struct SimulateFlags {
  std::string plan;
  std::string topology;
  ModelFlags model;
  std::string trace;
  std::string timeline;
  std::string format = "table";  // table, json, csv (one row) or metrics (metric,value rows)
  std::string out;               // -o: the report into this file (atomically); "": stdout
  bool append = false;           // --append: the CSV row onto -o's file (stdout: no header)
  int ranks = 8;
  bool quiet = false;
  std::string trace_ranks;
  bool trace_ranks_given = false;  // else the first sim::kDefaultTraceRanks
  bool no_coalesce = false;
  bool no_symmetry = false;
  std::string model_name;  // --model: the model whose layers the plan serves
  std::string max_memory;  // --max-memory: host memory the replay may use ("": available now)
  std::string max_ops;     // --max-ops: ops the expansion may emit ("": SimOptions' default)
};

// A rank or the end of a range: digits only, below `ranks`.
std::optional<int64_t> ParseRank(const std::string& text, int64_t ranks) {
  int64_t value = -1;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || value < 0 ||
      value >= ranks) {
    return std::nullopt;
  }
  return value;
}

// --trace-ranks: "all" (empty result: every rank), or ranks and inclusive ranges "0-15,100", as an
// ascending list without repeats; with the flag absent (`given` false), the first
// sim::kDefaultTraceRanks.
Result<std::vector<int64_t>> TraceRanks(const std::string& text, bool given, int64_t ranks) {
  if (text == "all") return std::vector<int64_t>{};
  if (!given) {
    std::vector<int64_t> first;
    if (ranks <= sim::kDefaultTraceRanks) return first;
    for (int64_t r = 0; r < sim::kDefaultTraceRanks; ++r) first.push_back(r);
    return first;
  }
  std::vector<uint8_t> chosen(static_cast<size_t>(ranks), 0);
  for (const std::string& item : SplitList(text)) {
    const size_t dash = item.find('-');
    const std::optional<int64_t> lo = ParseRank(item.substr(0, dash), ranks);
    const std::optional<int64_t> hi =
        dash == std::string::npos ? lo : ParseRank(item.substr(dash + 1), ranks);
    if (!lo || !hi || *hi < *lo) {
      return Status::Invalid("--trace-ranks: " + QuoteInput(item) +
                             " is not a rank or a range LO-HI of ranks in [0, " +
                             std::to_string(ranks) + ") (or use all)");
    }
    for (int64_t r = *lo; r <= *hi; ++r) chosen[static_cast<size_t>(r)] = 1;
  }
  std::vector<int64_t> list;
  for (int64_t r = 0; r < ranks; ++r) {
    if (chosen[static_cast<size_t>(r)]) list.push_back(r);
  }
  if (list.empty()) return Status::Invalid("--trace-ranks: no ranks given");
  return list;
}

// Progress on stderr for replays that take a while, counted from when it was made (before the
// expansion); the expansion and the replay share one. On a terminal, a bar per phase with the
// time left (tools/progress_bar.h); elsewhere lines, the first after 2 s and then at most one a
// second: "meshplan: simulate: <what> <done> of <total> <unit> (<pct>) after <t> s".
class ProgressLine {
 public:
  ProgressLine()
      : start_(Clock::now()), next_(start_ + std::chrono::seconds(2)), bar_("simulate") {}
  void Report(const char* what, const char* unit, int64_t done, int64_t total) {
    if (bar_.drawing()) {
      if (phase_ != what) {
        phase_ = what;
        bar_.NextPhase(std::string("simulate: ") + (phase_.empty() ? "replaying" : "expanding"));
      }
      bar_.Update(done, total);
      return;
    }
    const Clock::time_point now = Clock::now();
    if (now < next_) return;
    next_ = now + std::chrono::seconds(1);
    std::fprintf(stderr, "meshplan: simulate: %s%lld of %lld %s (%.0f%%) after %.1f s\n", what,
                 static_cast<long long>(done), static_cast<long long>(total), unit,
                 total > 0 ? 100.0 * static_cast<double>(done) / static_cast<double>(total) : 0.0,
                 std::chrono::duration<double>(now - start_).count());
    std::fflush(stderr);
  }

 private:
  using Clock = std::chrono::steady_clock;
  Clock::time_point start_, next_;
  ProgressBar bar_;
  std::string phase_ = "-";  // the `what` of the phase the bar shows; "-": none yet
};

// Ranks drawn in the --timeline picture (one lane each); more stay readable only in the trace.
constexpr int kTimelineLanes = 32;

// simulate's own flags, and every output path, before any work: a bad one is refused (exit 2)
// before the replay.
Status CheckSimulateFlags(const SimulateFlags& flags) {
  MESHPLAN_RETURN_IF_ERROR(CheckFormat(flags.format, {"table", "json", "csv", "metrics"}));
  if (flags.append && flags.format != "csv")
    return Status::Invalid("--append: only with --format csv (got --format " + flags.format + ")");
  if (flags.ranks < 0) return Status::Invalid("--slowest (--ranks): must not be negative");
  const std::pair<const char*, const std::string*> outputs[] = {
      {"--trace", &flags.trace}, {"--timeline", &flags.timeline}, {"-o", &flags.out}};
  for (const auto& [flag, path] : outputs) {
    if (!path->empty()) MESHPLAN_RETURN_IF_ERROR(CheckWritableOutput(*path).WithContext(flag));
  }
  // One file for two outputs would keep only the last written.
  for (size_t i = 0; i < 3; ++i) {
    for (size_t j = i + 1; j < 3; ++j) {
      if (!outputs[i].second->empty() && SameOutputFile(*outputs[i].second, *outputs[j].second)) {
        return Status::Invalid(std::string(outputs[i].first) + " and " + outputs[j].first +
                               ": the same file (" + *outputs[i].second +
                               "), which would keep only one of them");
      }
    }
  }
  return Status::Ok();
}

// The replay the flags ask for, with progress on stderr unless -q, and its wall-clock seconds.
Result<sim::PlanSimulation> Replay(const SimulateFlags& flags, const Plan& plan,
                                   const Topology& topology, double* wall_s) {
  sim::SimOptions options;
  options.record_op_times = !flags.trace.empty() || !flags.timeline.empty();
  options.coalesce_compute = !flags.no_coalesce;
  options.use_symmetry = !flags.no_symmetry;
  MESHPLAN_RETURN_IF_ERROR(SetReplayMemoryLimit(flags.max_memory, &options));
  if (!flags.max_ops.empty()) {
    auto ops = ParseCount(flags.max_ops);
    if (!ops.ok()) return ops.status().WithContext("--max-ops");
    options.max_expansion_ops = *ops;
  }
  std::shared_ptr<ProgressLine> line;
  if (!flags.quiet) {
    line = std::make_shared<ProgressLine>();
    options.expansion_progress = [line](int64_t done, int64_t total) {
      line->Report("expanded ", "ranks", done, total);
    };
    options.progress = [line](int64_t done, int64_t total) {
      line->Report("", "ops done", done, total);
    };
  }
  const auto start = std::chrono::steady_clock::now();
  auto sim = sim::SimulatePlan(plan, topology, options);
  options.expansion_progress = {};
  options.progress = {};
  line.reset();  // a bar is erased before anything else reaches the terminal
  *wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!sim.ok()) return sim.status().WithContext(flags.plan);
  return sim;
}

// The trace and the timeline, before the report, so that a failure to write them leaves only the
// error on the terminal.
Status WriteTraceFiles(const SimulateFlags& flags, const sim::PlanSimulation& sim,
                       const std::vector<int64_t>& trace_ranks, int64_t plan_gpus) {
  if (!flags.trace.empty()) {
    const std::string trace =
        sim::ChromeTrace(sim.schedule, sim.result, sim.rank_to_gpu, trace_ranks);
    MESHPLAN_RETURN_IF_ERROR(WriteFileAtomically(flags.trace, trace));
    if (!flags.trace_ranks_given && !trace_ranks.empty() && !flags.quiet) {
      std::fprintf(
          stderr,
          "meshplan: note: the trace holds ranks 0-%lld of %lld (--trace-ranks all: every rank)\n",
          static_cast<long long>(trace_ranks.back()), static_cast<long long>(plan_gpus));
    }
  }
  if (!flags.timeline.empty()) {
    const std::string svg =
        plot::RenderTimeline(report::SimulatedTimeline(sim.schedule, sim.result, kTimelineLanes));
    MESHPLAN_RETURN_IF_ERROR(WriteFileAtomically(flags.timeline, svg));
  }
  return Status::Ok();
}

// The report in the format asked for, where -o says. Returns the exit code.
int EmitSimulationReport(const SimulateFlags& flags, const report::SimulationReport& summary) {
  if (flags.format == "csv")
    return EmitCsvReport(flags.out, report::SimulationCsv(summary), flags.append, flags.quiet);
  return EmitReport(flags.out,
                    flags.format == "json"      ? report::SimulationJson(summary, flags.trace)
                    : flags.format == "metrics" ? report::SimulationMetricsCsv(summary)
                                                : report::SimulationTable(summary),
                    flags.quiet);
}

// "wrote ..." lines for the trace and the timeline.
void NoteWrittenFiles(const SimulateFlags& flags, const sim::PlanSimulation& sim,
                      const std::vector<int64_t>& trace_ranks) {
  if (flags.quiet) return;  // -q: nothing on stderr but errors
  if (!flags.trace.empty()) {
    int64_t ops = 0, traced = 0;
    for (size_t r = 0; r < sim.schedule.ranks.size(); ++r) {
      const bool in =
          trace_ranks.empty() ||
          std::binary_search(trace_ranks.begin(), trace_ranks.end(), static_cast<int64_t>(r));
      ops += in ? static_cast<int64_t>(sim.schedule.ranks[r].ops.size()) : 0;
      traced += in;
    }
    std::fprintf(stderr, "meshplan: wrote trace (%lld ops of %lld ranks) to %s\n",
                 static_cast<long long>(ops), static_cast<long long>(traced), flags.trace.c_str());
  }
  if (!flags.timeline.empty()) {
    const int64_t ranks = sim.schedule.num_ranks;
    std::fprintf(stderr, "meshplan: wrote timeline (%lld of %lld ranks) to %s\n",
                 static_cast<long long>(std::min<int64_t>(ranks, kTimelineLanes)),
                 static_cast<long long>(ranks), flags.timeline.c_str());
  }
}

int RunSimulate(const SimulateFlags& flags) {
  if (Status st = CheckSimulateFlags(flags); !st.ok()) return ReportError(st);
  auto plan = planner::LoadPlanFile(flags.plan);
  if (!plan.ok()) return ReportError(plan.status());
  auto topology = PlanTopology(flags.plan, flags.topology, *plan, flags.model, flags.quiet);
  if (!topology.ok()) return ReportError(topology.status());
  NoteHeadDim(*topology, plan->workload.head_dim, flags.quiet);
  NoteCalibrationSpeed(*topology, flags.quiet);
  auto trace_ranks = TraceRanks(flags.trace_ranks, flags.trace_ranks_given, plan->num_gpus);
  if (!trace_ranks.ok()) return ReportError(trace_ranks.status());
  double wall_s = 0;
  auto sim = Replay(flags, *plan, *topology, &wall_s);
  if (!sim.ok()) return ReportError(sim.status());
  if (Status st = WriteTraceFiles(flags, *sim, *trace_ranks, plan->num_gpus); !st.ok())
    return ReportError(st);
  report::SimulationReport summary =
      report::MakeSimulationReport(*plan, *topology, *sim, flags.plan, wall_s, flags.ranks);
  if (!flags.model_name.empty()) {
    // Every layer of the model under this plan: the sliding ones replayed under their window.
    auto model = LoadModelConfig(flags.model_name);
    if (!model.ok()) return ReportError(model.status().WithContext("--model"));
    auto layers = sim::ReplayModelLayers(*plan, *topology, *model, sim->result.total_s);
    if (!layers.ok()) return ReportError(layers.status());
    summary.model = layers->model;
    summary.model_layers = layers->layers;
    summary.all_layers_s = layers->all_layers_s;
  }
  if (int written = EmitSimulationReport(flags, summary); written != kExitOk) return written;
  NoteWrittenFiles(flags, *sim, *trace_ranks);
  return kExitOk;
}

}  // namespace

Runner RegisterSimulateCommand(CLI::App& app) {
  auto flags = std::make_shared<SimulateFlags>();
  CLI::App* cmd =
      app.add_subcommand("simulate", "Replay a plan file in the simulator and report its timeline");
  cmd->add_option("plan", flags->plan, "Plan file (TOML, from meshplan plan --out)")->required();
  cmd->add_option("--model", flags->model_name,
                  "Model whose attention layers the plan serves (config.json or shipped name): "
                  "adds the time of all of them in one training step");
  cmd->add_option("--topology,-t", flags->topology,
                  "Cluster TOML file or shipped cluster name (default: the plan's own topology, "
                  "when built-in or an existing file)");
  flags->model.Register(*cmd);
  cmd->add_option("--trace", flags->trace,
                  "Write a Chrome trace (JSON; opens in Perfetto) to this file");
  cmd->add_option("--timeline", flags->timeline,
                  "Write an SVG timeline (one lane per rank, first 32 ranks) to this file");
  cmd->add_option("--format", flags->format,
                  "Output: table, json, csv (one row per run with a header; --append adds "
                  "rows) or metrics (one metric,value pair per line)")
      ->capture_default_str();
  cmd->add_option("-o,--out", flags->out, "Write the report here (atomically); default: stdout");
  cmd->add_flag("--append", flags->append,
                "With --format csv: add the row to -o's file when it has the same header (on "
                "stdout: the row without the header, for >> FILE)");
  // --slowest: `--ranks` means ranks sharing a machine elsewhere (calibrate); the old spelling
  // still works here for a release (hidden from --help).
  cmd->add_option("--slowest", flags->ranks, "Slowest ranks to list (0: all)")
      ->capture_default_str();
  cmd->add_option("--ranks", flags->ranks, "The old name of --slowest")->group("");
  cmd->add_option("--trace-ranks", flags->trace_ranks,
                  "Ranks the trace holds: all, or ranks and ranges such as 0-15,100 (default: "
                  "every rank up to 64 "
                  "ranks, else ranks 0-63, with a note)")
      ->each([flags](const std::string&) { flags->trace_ranks_given = true; });
  cmd->add_flag(
      "--no-coalesce", flags->no_coalesce,
      "Replay every compute op, not the timing view that merges runs of blocks which time as one "
      "(the same result up to a nanosecond per merged block; slower)");
  cmd->add_flag("--no-symmetry", flags->no_symmetry,
                "Replay every rank, not one representative per symmetry class (the same result up "
                "to rounding; "
                "slower, and far larger at thousands of ranks)");
  cmd->add_option("--max-memory", flags->max_memory,
                  "Host memory the replay may use (e.g. 16G; K, M, G are binary); a plan whose "
                  "replay is projected to need more is refused as its programs are expanded, "
                  "before the replay (default: the memory available now, from /proc/meminfo "
                  "and the cgroup limit)");
  cmd->add_option("--max-ops", flags->max_ops,
                  "Ops the expansion may emit over all ranks (e.g. 4G), projected as each rank is "
                  "expanded; past it the replay is refused (default 2^31, minutes of expansion)");
  cmd->add_flag("--quiet,-q", flags->quiet,
                "No progress messages on stderr (replays over 2 s report every second)");
  return [flags] { return RunSimulate(*flags); };
}

}  // namespace meshplan::tools
