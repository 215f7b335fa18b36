// `meshplan plan`: rank every context-parallel scheme for a workload on a cluster.
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <memory>

#include "core/atomic_file.h"
#include "core/units.h"
#include "planner/frameworks.h"
#include "planner/model_layers.h"
#include "planner/plan_file.h"
#include "planner/schemes/registry.h"
#include "planner/search.h"
#include "planner/strategy.h"
#include "report/plan_explain.h"
#include "report/plan_report.h"
#include "simulator/simulation_timer.h"
#include "tools/cli_common.h"
#include "tools/commands.h"

namespace meshplan::tools {
namespace {

struct PlanFlags {
  WorkloadFlags workload;
  TopologyFlag topology;
  ParallelFlags parallel;
  std::string framework = "any";
  std::string seq_round;  // --seq-round up|down: "" keeps --seq as given
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

// --framework: keeps the ranked plans the framework runs (in order) and returns the best fitting
// plan over every scheme, taken before. Error: the framework runs none of the valid plans (the
// reasons per scheme).
Result<std::optional<planner::Estimate>> KeepFrameworkPlans(planner::Framework framework,
                                                            const planner::PlanContext& ctx,
                                                            planner::SearchResult* result) {
  if (framework == planner::Framework::kAny) return std::optional<planner::Estimate>();
  std::optional<planner::Estimate> best_any;
  for (const planner::Estimate& e : result->ranked) {
    if (e.fits) {
      best_any = e;
      break;
    }
  }
  std::vector<planner::Estimate> kept;
  std::string reasons;
  std::vector<std::string> seen;
  for (planner::Estimate& e : result->ranked) {
    const std::string why =
        planner::RunIn(framework, e.params, ctx.workload, ctx.topology.num_gpus()).why_not;
    if (why.empty()) {
      kept.push_back(std::move(e));
      continue;
    }
    const std::string scheme(SchemeName(e.params.scheme));
    if (std::find(seen.begin(), seen.end(), scheme) == seen.end()) {
      seen.push_back(scheme);
      reasons += (reasons.empty() ? "" : "; ") + scheme + ": " + why;
    }
  }
  if (kept.empty()) {
    return Status::Invalid("--framework " + std::string(planner::FrameworkName(framework)) + ": " +
                           std::string(planner::FrameworkTitle(framework)) +
                           " runs none of the valid plans (" + reasons + ")");
  }
  result->ranked = std::move(kept);
  return best_any;
}

// The reasons no scheme has a valid plan, each said once: schemes with the same reason follow
// the first as "; a, b: the same"; when a reason is a length the layouts cannot split, how to
// get one they can.
std::string NoPlanReasons(const planner::SearchResult& result) {
  std::vector<std::pair<std::string, std::vector<std::string>>> groups;  // reason -> schemes
  bool any_length = false;
  for (const planner::Estimate& e : result.rejected) {
    const std::string scheme(SchemeName(e.params.scheme));
    any_length = any_length || e.reason.find("is not divisible by") != std::string::npos;
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const auto& g) { return g.first == e.reason; });
    if (it == groups.end()) {
      groups.push_back({e.reason, {scheme}});
    } else {
      it->second.push_back(scheme);
    }
  }
  std::string out;
  for (const auto& [reason, schemes] : groups) {
    out += (out.empty() ? "" : "; ") + schemes.front() + ": " + reason;
    if (schemes.size() > 1) {
      out += "; ";
      for (size_t i = 1; i < schemes.size(); ++i) out += (i > 1 ? ", " : "") + schemes[i];
      out += ": the same";
    }
  }
  if (any_length) {
    out +=
        "; --seq-round up or down takes the nearest length they split (K and M are binary: "
        "1M = 1048576)";
  }
  return out;
}

// --seq-round: the sequence rounded to a multiple of 2 chunks per GPU (every layout's unit on
// `gpus` GPUs without sub-shards), and a note saying so. Errors: another value.
Result<std::string> RoundSequence(const std::string& how, int64_t gpus, Workload& workload) {
  if (how.empty()) return std::string();
  if (how != "up" && how != "down")
    return Status::Invalid("--seq-round: '" + how + "' is not up or down");
  const int64_t unit = 2 * gpus;
  const int64_t seq = workload.seq_len;
  int64_t rounded = how == "up" ? (seq + unit - 1) / unit * unit : seq / unit * unit;
  if (rounded < unit) rounded = unit;
  if (rounded == seq) return std::string();
  MESHPLAN_RETURN_IF_ERROR(SetSequenceLength(workload, rounded).WithContext("--seq-round"));
  MESHPLAN_RETURN_IF_ERROR(workload.Validate().WithContext("--seq-round"));
  return "--seq " + std::to_string(seq) + " rounded " + how + " to " + std::to_string(rounded) +
         " (a multiple of " + std::to_string(unit) + ": 2 chunks per GPU x " +
         std::to_string(gpus) + " GPUs)";
}

int RunPlan(const PlanFlags& flags) {
  if (flags.list_schemes) {  // the one list scripts and people read (the registry's)
    std::fputs(planner::SchemeListing().c_str(), stdout);
    return kExitOk;
  }
  // A bad --out is refused before the search, not after it (issue 33).
  if (!flags.out.empty()) {
    if (Status st = CheckWritableOutput(flags.out); !st.ok())
      return ReportError(st.WithContext("--out"));
  }
  auto framework = planner::ParseFramework(flags.framework);
  if (!framework.ok()) return ReportError(framework.status());
  if (std::string why = planner::FrameworkUnsupported(*framework); !why.empty())
    return ReportError(Status::Invalid(why));
  auto workload = flags.workload.Build();
  if (!workload.ok()) return ReportError(workload.status());
  // TransformerEngine's rings send their partials in the workload's dtype (docs/frameworks.md).
  std::string framework_note;
  if (*framework == planner::Framework::kMegatron && !flags.workload.Given("--partial-dtype") &&
      workload->partial_dtype != workload->dtype) {
    workload->partial_dtype = workload->dtype;
    framework_note = "partials travel in " + std::string(DTypeName(workload->dtype)) +
                     ", as TransformerEngine sends them (--partial-dtype overrides)";
  }
  auto model = flags.workload.Model();
  if (!model.ok()) return ReportError(model.status());
  auto topology = flags.topology.Load();
  if (!topology.ok()) return ReportError(topology.status());
  if (Status st = flags.parallel.Apply(*topology, *workload); !st.ok()) return ReportError(st);
  auto rounded = RoundSequence(flags.seq_round, topology->num_gpus(), *workload);
  if (!rounded.ok()) return ReportError(rounded.status());
  if (!rounded->empty()) std::fprintf(stderr, "meshplan: note: %s\n", rounded->c_str());
  planner::ModelWorkloads layers;
  if (*model) {
    auto made = planner::MakeModelWorkloads(**model, *workload);
    if (!made.ok()) return ReportError(made.status());
    layers = std::move(made).value();
    // Every layer slides: the plans are ranked on the window's workload.
    if (layers.window && layers.layers.global_layers == 0) {
      *workload = *layers.window;
      layers.window.reset();
    }
  }
  if (Status st = topology->SupportsDType(workload->dtype); !st.ok()) return ReportError(st);
  if (Status st = CheckFormat(flags.format, {"table", "json", "csv"}); !st.ok())
    return ReportError(st);
  NoteHeadDim(*topology, workload->head_dim, flags.quiet);
  if (Status st = CheckReserveGiB(flags.reserve_gib); !st.ok())
    return ReportError(st.WithContext("--reserve-gib"));
  if (flags.simulate < 0) return ReportError(Status::Invalid("--simulate: must not be negative"));
  if (flags.top < 0)
    return ReportError(Status::Invalid("--top: must not be negative (0 lists all)"));
  auto explain = ExplainedPlanNumber(flags);
  if (!explain.ok()) return ReportError(explain.status());
  if (*explain > 0 && flags.format == "csv") {
    return ReportError(
        Status::Invalid("--explain: not available with --format csv (use --format json, "
                        "which holds the breakdown under \"explain\", or the table)"));
  }
  planner::SearchOptions options;
  for (const std::string& name : SplitList(flags.schemes)) {
    auto scheme = planner::ParseScheme(name);
    if (!scheme.ok()) return ReportError(scheme.status().WithContext("--schemes"));
    options.schemes.push_back(*scheme);
  }
  const planner::PlanContext ctx(*workload, *topology, flags.reserve_gib * kGiB);
  planner::SearchResult result = planner::Search(ctx, options);
  std::unique_ptr<planner::PlanContext> window_ctx;
  if (layers.window) {
    window_ctx =
        std::make_unique<planner::PlanContext>(*layers.window, *topology, flags.reserve_gib * kGiB);
  }

  // Before the counts, so that plan numbers are the framework's ranking.
  const size_t valid_any = result.ranked.size();
  Result<std::optional<planner::Estimate>> best_any = std::optional<planner::Estimate>();
  if (!result.ranked.empty()) best_any = KeepFrameworkPlans(*framework, ctx, &result);
  if (!best_any.ok()) return ReportError(best_any.status());
  const int count = static_cast<int>(result.ranked.size());
  if (count == 0) {
    return ReportError(Status::Invalid("no scheme has a valid plan for " + ctx.workload.Describe() +
                                       " on " + std::to_string(ctx.num_ranks) + " GPUs (" +
                                       NoPlanReasons(result) + ")"));
  }
  if ((flags.pick < 1 || flags.pick > count) && (!flags.out.empty() || flags.pick != 1)) {
    return ReportError(Status::Invalid("--pick: " + std::to_string(flags.pick) +
                                       " is not a plan number (1.." + std::to_string(count) + ")"));
  }
  if (*explain > count) {
    return ReportError(Status::Invalid("--explain: " + std::to_string(*explain) +
                                       " is not a plan number (1.." + std::to_string(count) + ")"));
  }
  // After the flag checks, so that a bad flag does not wait for the replays.
  if (flags.simulate > 0) {
    const int total = std::min(flags.simulate, count);
    sim::SimulationTimer::BeforeReplay progress;
    if (!flags.quiet) {
      progress = [total](int call) {
        std::fprintf(stderr, "meshplan: simulating plan %d/%d...\n", call, total);
        std::fflush(stderr);
      };
    }
    sim::SimulationTimer timer(progress);
    if (Status st = planner::RerankBySimulation(ctx, timer, flags.simulate, &result); !st.ok()) {
      return ReportError(st);
    }
  }
  if (*model) planner::TimeModelLayers(window_ctx.get(), layers.layers, &result);
  // The breakdown's expanded schedule (skipped on large clusters).
  std::unique_ptr<Schedule> schedule;
  if (*explain > 0 && ctx.num_ranks <= kMaxExplainRanks) {
    const planner::Estimate& e = result.ranked[*explain - 1];
    auto expanded = planner::MakeStrategy(e.params.scheme)->Expand(ctx, e.params);
    if (!expanded.ok()) return ReportError(expanded.status());
    schedule = std::make_unique<Schedule>(std::move(expanded).value());
  }
  report::PlanListing listing;
  listing.top = flags.top;
  listing.all_variants = flags.all_variants;
  listing.wide = flags.wide;
  const report::ModelView view = MakeModelView(*model, flags.parallel.degrees);
  if (*model || !flags.parallel.degrees.trivial()) listing.model = &view;
  listing.framework = *framework;
  listing.framework_note = framework_note;
  listing.valid_any = valid_any;
  if (*best_any) listing.best_any = &**best_any;
  if (flags.format == "json") {
    const report::ExplainedPlan explained{*explain, schedule.get()};
    std::fputs(report::PlanJson(ctx, result, listing, *explain > 0 ? &explained : nullptr).c_str(),
               stdout);
  } else if (flags.format == "csv") {
    std::fputs(report::PlanCsv(ctx, result, listing).c_str(), stdout);
  } else {
    std::fputs(report::PlanTable(ctx, result, listing).c_str(), stdout);
    if (*explain > 0) {
      const planner::Estimate& e = result.ranked[*explain - 1];
      std::fputs(("\n" + report::PlanExplain(ctx, e, *explain, schedule.get())).c_str(), stdout);
    }
  }
  if (!flags.out.empty()) {
    const planner::Estimate& e = result.ranked[flags.pick - 1];
    Plan plan = planner::MakePlan(ctx, e.params);
    plan.tp = flags.parallel.degrees.tp;
    plan.dp = flags.parallel.degrees.dp;
    const std::string text = planner::PlanToToml(plan, report::EstimateToml(e));
    if (Status st = WriteFileAtomically(flags.out, text); !st.ok()) return ReportError(st);
    std::fprintf(stderr, "meshplan: wrote plan #%d (%s %s) to %s\n", flags.pick,
                 std::string(SchemeName(e.params.scheme)).c_str(),
                 planner::DescribeParams(e.params).c_str(), flags.out.c_str());
  }
  return kExitOk;
}

}  // namespace

Runner RegisterPlanCommand(CLI::App& app) {
  auto flags = std::make_shared<PlanFlags>();
  CLI::App* cmd =
      app.add_subcommand("plan", "Rank every context-parallel scheme for a workload on a cluster");
  flags->topology.Register(*cmd);
  flags->workload.Register(*cmd);
  flags->parallel.Register(*cmd);
  cmd->add_option("--seq-round", flags->seq_round,
                  "Round --seq to the nearest length every layout splits on this cluster (a "
                  "multiple of 2 x GPUs): up or down; a note says what it became");
  cmd->add_option("--framework", flags->framework,
                  "Keep the plans this framework runs and print its settings for the best: "
                  "megatron, yunchang, internevo, magi or any (docs/frameworks.md)")
      ->capture_default_str();
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
