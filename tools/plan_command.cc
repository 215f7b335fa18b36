// `meshplan plan`: rank every context-parallel scheme for a workload on a cluster.
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <memory>

#include "capacity/scale_topology.h"
#include "core/base/atomic_file.h"
#include "core/base/units.h"
#include "planner/frameworks.h"
#include "planner/model_layers.h"
#include "planner/plan_file.h"
#include "planner/schemes/registry.h"
#include "planner/search.h"
#include "planner/strategy.h"
#include "report/plan/plan_explain.h"
#include "report/plan/plan_report.h"
#include "simulator/simulation_timer.h"
#include "tools/cli_common.h"
#include "tools/commands.h"
#include "tools/planning_flags.h"

namespace meshplan::tools {
namespace {

struct PlanFlags {
  WorkloadFlags workload;
  TopologyFlag topology;
  ParallelFlags parallel;
  PlanningFlags planning;  // --framework, --seq-round
  std::string schemes;
  std::string format = "table";
  std::string out;
  int pick = 1;
  std::string explain;  // plan number; "" when --explain is given without one (plan 1)
  bool explain_given = false;
  int top = 20;
  bool all_variants = false;  // every plan on its own row
  bool wide = false;          // the table's every column
  double reserve_gib = 0;
  std::string gpus;           // "": the cluster's own size; else its first N GPUs
  int simulate = 0;           // re-rank the top K plans by simulated time
  bool quiet = false;         // no progress on stderr
  bool list_schemes = false;  // print the registry's schemes and exit
};

// --explain expands the whole schedule to show rank 0's first ops; ring-like schedules grow as
// P^2 ops, so beyond this many ranks the listing is skipped.
constexpr int64_t kMaxExplainRanks = 512;

// --explain's plan number: 1 when the flag has no value, 0 when it is absent.
Result<int> ExplainedPlanNumber(const PlanFlags& flags) {
  if (!flags.explain_given) return 0;
  if (flags.explain.empty()) return 1;
  int number = 0;
  const char* end = flags.explain.data() + flags.explain.size();
  const auto parsed = std::from_chars(flags.explain.data(), end, number);
  if (parsed.ec != std::errc() || parsed.ptr != end || number < 1) {
    return Status::Invalid("--explain: '" + flags.explain + "' is not a plan number (1 or more)");
  }
  return number;
}

// What the listing says of the model and the degrees.
report::ModelView MakeModelView(const std::optional<ModelConfig>& model,
                                const ParallelDegrees& degrees) {
  report::ModelView view;
  view.degrees = degrees;
  if (!model) return view;
  view.name = model->name;
  view.description = model->Describe();
  view.source = model->source;
  view.layers = model->layers;
  view.window_layers = model->window_layers;
  view.window = model->window;
  view.q_heads = model->q_heads;
  view.kv_heads = model->kv_heads;
  return view;
}

// The plan command's own flags, checked before any planning. Returns --explain's plan number.
Result<int> CheckPlanFlags(const PlanFlags& flags) {
  // A bad --out is refused before the search, not after it (issue 33).
  if (!flags.out.empty())
    MESHPLAN_RETURN_IF_ERROR(CheckWritableOutput(flags.out).WithContext("--out"));
  MESHPLAN_RETURN_IF_ERROR(CheckFormat(flags.format, {"table", "json", "csv"}));
  if (flags.simulate < 0) return Status::Invalid("--simulate: must not be negative");
  if (flags.top < 0) return Status::Invalid("--top: must not be negative (0 lists all)");
  MESHPLAN_ASSIGN_OR_RETURN(int explain, ExplainedPlanNumber(flags));
  if (explain > 0 && flags.format == "csv") {
    return Status::Invalid(
        "--explain: not available with --format csv (use --format json, which holds the "
        "breakdown under \"explain\", or the table)");
  }
  return explain;
}

// --pick and --explain against the ranking, and the notes, before any replay.
Status BeforeReplay(const PlanFlags& flags, int explain, const planner::PlanAnswer& answer) {
  if (!answer.prepared.rounding_note.empty() && !flags.quiet)
    std::fprintf(stderr, "meshplan: note: %s\n", answer.prepared.rounding_note.c_str());
  const int count = static_cast<int>(answer.result.ranked.size());
  if (count == 0) return answer.NoPlanError();
  const std::string range = " is not a plan number (1.." + std::to_string(count) + ")";
  if ((flags.pick < 1 || flags.pick > count) && (!flags.out.empty() || flags.pick != 1))
    return Status::Invalid("--pick: " + std::to_string(flags.pick) + range);
  if (explain > count) return Status::Invalid("--explain: " + std::to_string(explain) + range);
  return Status::Ok();
}

// The answer to the flags' request, the top plans replayed with --simulate.
Result<std::unique_ptr<planner::PlanAnswer>> Answer(const PlanFlags& flags, int explain) {
  MESHPLAN_ASSIGN_OR_RETURN(planner::PlanRequest request,
                            MakePlanRequest(flags.workload, flags.topology, flags.parallel.degrees,
                                            flags.planning, flags.schemes, flags.reserve_gib));
  if (!flags.gpus.empty()) {
    auto gpus = ParseCount(flags.gpus);
    if (!gpus.ok()) return gpus.status().WithContext("--gpus");
    auto scaled = capacity::ScaleTopology(request.topology, *gpus);
    if (!scaled.ok()) return scaled.status().WithContext("--gpus");
    request.topology = std::move(scaled).value();
  }
  NoteHeadDim(request.topology, request.workload.head_dim, flags.quiet);
  NoteCalibrationSpeed(request.topology, flags.quiet);
  int replayed = 0;  // plans --simulate replays: known once the ranking is
  sim::SimulationTimer::BeforeReplay progress;
  if (!flags.quiet) {
    progress = [&replayed](int call) {
      std::fprintf(stderr, "meshplan: simulating plan %d/%d...\n", call, replayed);
      std::fflush(stderr);
    };
  }
  sim::SimulationTimer timer(progress);
  planner::ReplayOptions replay;
  replay.timer = flags.simulate > 0 ? &timer : nullptr;
  replay.top = flags.simulate;
  replay.before_replay = [&](const planner::PlanAnswer& filtered) {
    replayed = std::min(flags.simulate, static_cast<int>(filtered.result.ranked.size()));
    return BeforeReplay(flags, explain, filtered);
  };
  return planner::AnswerPlanRequest(request, replay);
}

// The listing (table, JSON or CSV) with the breakdown of plan `explain` (0: none).
Result<std::string> Listing(const PlanFlags& flags, const planner::PlanAnswer& answer,
                            int explain) {
  // The breakdown's expanded schedule (skipped on large clusters).
  std::unique_ptr<Schedule> schedule;
  const planner::PlanContext& ctx = answer.ctx;
  if (explain > 0 && ctx.num_ranks <= kMaxExplainRanks) {
    const planner::Estimate& e = answer.result.ranked[explain - 1];
    MESHPLAN_ASSIGN_OR_RETURN(Schedule expanded,
                              planner::MakeStrategy(e.params.scheme)->Expand(ctx, e.params));
    schedule = std::make_unique<Schedule>(std::move(expanded));
  }
  report::PlanListing listing;
  listing.top = flags.top;
  listing.all_variants = flags.all_variants;
  listing.wide = flags.wide;
  const std::optional<ModelConfig>& model = answer.prepared.model;
  const report::ModelView view = MakeModelView(model, flags.parallel.degrees);
  if (model || !flags.parallel.degrees.trivial()) listing.model = &view;
  listing.framework = answer.prepared.framework;
  listing.framework_note = answer.prepared.framework_note;
  listing.framework_run = [&answer](const planner::Estimate& e) {
    return answer.FrameworkRunOf(e);
  };
  listing.valid_any = answer.valid_any;
  if (answer.best_any) listing.best_any = &*answer.best_any;
  if (flags.format == "json") {
    const report::ExplainedPlan explained{explain, schedule.get()};
    return report::PlanJson(ctx, answer.result, listing, explain > 0 ? &explained : nullptr);
  }
  if (flags.format == "csv") return report::PlanCsv(ctx, answer.result, listing);
  std::string text = report::PlanTable(ctx, answer.result, listing);
  if (explain > 0) {
    text +=
        "\n" + report::PlanExplain(ctx, answer.result.ranked[explain - 1], explain, schedule.get());
  }
  return text;
}

// --out: the picked plan as a plan file.
Status WritePickedPlan(const PlanFlags& flags, const planner::PlanAnswer& answer) {
  const planner::Estimate& e = answer.result.ranked[flags.pick - 1];
  Plan plan = planner::MakePlan(answer.ctx, e.params);
  plan.tp = flags.parallel.degrees.tp;
  plan.dp = flags.parallel.degrees.dp;
  const std::string text = planner::PlanToToml(plan, report::EstimateToml(e));
  MESHPLAN_RETURN_IF_ERROR(WriteFileAtomically(flags.out, text));
  if (flags.quiet) return Status::Ok();  // -q: nothing on stderr but errors
  std::fprintf(stderr, "meshplan: wrote plan #%d (%s %s) to %s\n", flags.pick,
               std::string(SchemeName(e.params.scheme)).c_str(),
               planner::DescribeParams(e.params).c_str(), flags.out.c_str());
  return Status::Ok();
}

int RunPlan(const PlanFlags& flags) {
  if (flags.list_schemes) {  // the one list scripts and people read (the registry's)
    std::fputs(planner::SchemeListing().c_str(), stdout);
    return kExitOk;
  }
  auto explain = CheckPlanFlags(flags);
  if (!explain.ok()) return ReportError(explain.status());
  auto answer = Answer(flags, *explain);
  if (!answer.ok()) return ReportError(answer.status());
  auto text = Listing(flags, **answer, *explain);
  if (!text.ok()) return ReportError(text.status());
  std::fputs(text->c_str(), stdout);
  if (flags.out.empty()) return kExitOk;
  if (Status st = WritePickedPlan(flags, **answer); !st.ok()) return ReportError(st);
  return kExitOk;
}

}  // namespace

Runner RegisterPlanCommand(CLI::App& app) {
  auto flags = std::make_shared<PlanFlags>();
  CLI::App* cmd =
      app.add_subcommand("plan", "Rank every context-parallel scheme for a workload on a cluster");
  flags->topology.Register(*cmd);
  flags->topology.quiet = &flags->quiet;
  flags->workload.Register(*cmd);
  flags->parallel.Register(*cmd);
  flags->planning.Register(*cmd);
  cmd->add_option("--schemes", flags->schemes,
                  "Comma-separated schemes to consider (default all): " +
                      planner::SchemeNamesText() + " (--list-schemes describes them)");
  cmd->add_flag("--list-schemes", flags->list_schemes,
                "Print every scheme's name and a line on what it does, then exit");
  cmd->add_option("--format", flags->format, "Output: table, json or csv")->capture_default_str();
  cmd->add_option("--top", flags->top, "Rows to list, each a group of equivalent plans (0: all)")
      ->capture_default_str();
  cmd->add_flag(
      "--all-variants", flags->all_variants,
      "List every plan on its own row instead of grouping equivalent plans (same time within 0.5% "
      "and same bytes per GPU)");
  cmd->add_flag("--wide", flags->wide,
                "Table: every column (scheme and parameters apart, compute, imbalance)");
  cmd->add_option("--out,-o", flags->out, "Write the chosen plan (TOML) to this file");
  cmd->add_option("--pick", flags->pick, "Plan number written by --out (1 = best that fits)")
      ->capture_default_str();
  cmd->add_option("--explain", flags->explain,
                  "Break plan number N (default 1) down step by step (json: under \"explain\"; not "
                  "with csv)")
      ->expected(0, 1)
      ->type_name("[N]");
  cmd->add_option("--gpus", flags->gpus,
                  "Plan on the cluster's first N GPUs: its outermost level grown or shrunk to N "
                  "(whole inner groups; named NAME@N, as sweep and step scale it)");
  cmd->add_option("--reserve-gib", flags->reserve_gib,
                  "GPU memory (GiB) held back for weights, optimizer state and other activations")
      ->capture_default_str();
  cmd->add_option("--simulate", flags->simulate,
                  "Replay the top K plans in the simulator and re-rank them by simulated time")
      ->capture_default_str();
  cmd->add_flag("--quiet,-q", flags->quiet, "No progress messages on stderr");
  return [cmd, flags] {
    PlanFlags f = *flags;
    f.explain_given = cmd->count("--explain") > 0;
    return RunPlan(f);
  };
}

}  // namespace meshplan::tools
