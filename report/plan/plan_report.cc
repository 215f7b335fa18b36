#include "report/plan/plan_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/base/csv.h"
#include "core/base/json_writer.h"
#include "core/base/units.h"
#include "planner/equivalence.h"
#include "planner/schemes/registry.h"
#include "report/format/fabric_text.h"
#include "report/format/text_table.h"
#include "report/format/workload_json.h"
#include "report/plan/plan_explain.h"

namespace meshplan::report {
namespace {

// Whether the listing's framework runs `e`, and its settings (PlanListing::framework_run).
planner::FrameworkRun RunOf(const planner::PlanContext& ctx, const PlanListing& listing,
                            const planner::Estimate& e) {
  if (listing.framework_run) return listing.framework_run(e);
  return planner::RunIn(listing.framework, e.params, ctx.workload, ctx.topology.num_gpus());
}

// Whether any plan was re-ranked by simulation (then reports show a "simulated" column).
bool AnySimulated(const planner::SearchResult& result) {
  return std::any_of(result.ranked.begin(), result.ranked.end(),
                     [](const planner::Estimate& e) { return e.simulated_s >= 0; });
}

// The groups of equivalent plans and what a listing shows of them.
struct Listed {
  std::vector<planner::PlanGroup> groups;
  std::vector<size_t> group_of;          // per ranked plan: its group's index
  std::vector<planner::PlanGroup> rows;  // listed rows: whole groups, or single plans
  size_t total_rows = 0;                 // rows without --top
};

Listed List(const planner::SearchResult& result, const PlanListing& listing) {
  Listed l;
  l.groups = planner::GroupEquivalentPlans(result.ranked);
  l.group_of.resize(result.ranked.size());
  for (size_t g = 0; g < l.groups.size(); ++g) {
    for (size_t i : l.groups[g].members) l.group_of[i] = g;
  }
  l.total_rows = listing.all_variants ? result.ranked.size() : l.groups.size();
  const size_t n =
      listing.top <= 0 ? l.total_rows : std::min(l.total_rows, static_cast<size_t>(listing.top));
  for (size_t r = 0; r < n; ++r) {
    l.rows.push_back(listing.all_variants ? planner::PlanGroup{{r}} : l.groups[r]);
  }
  return l;
}

// "Plans #1, #3 and #4 are within the model's error ..." when more than one listed row is: the
// groups of the plans the model cannot tell apart from the best (planner::WithinModelError).
std::string ModelErrorLine(const planner::SearchResult& result, const Listed& listed) {
  const std::vector<size_t> close = planner::WithinModelError(result.ranked);
  if (close.size() < 2) return "";
  std::vector<size_t> groups;
  for (size_t i : close) {
    const size_t g = listed.group_of[i];
    if (std::find(groups.begin(), groups.end(), g) == groups.end()) groups.push_back(g);
  }
  const std::string pct = Fixed(planner::kModelErrorFraction * 100, 0) + "%";
  if (groups.size() < 2) return "";
  return "within the model's error: #" + std::to_string(close.front() + 1) + " to #" +
         std::to_string(close.back() + 1) + " (" + std::to_string(close.size()) + " plans in " +
         std::to_string(groups.size()) + " groups) are within " + pct + " of #" +
         std::to_string(close.front() + 1) +
         "'s time,\nthe model's median error on published GPU measurements (bench/published.py): "
         "the ranking cannot tell them apart\n";
}

// The "tie" cell: "+4" on a grouped row that stands for 4 more plans; with every variant listed,
// "=#1" on a plan equivalent to plan #1 (its group's representative).
std::string TiesCell(const Listed& listed, const planner::PlanGroup& row) {
  if (row.equivalents() > 0) return "+" + std::to_string(row.equivalents());
  const size_t representative =
      listed.groups[listed.group_of[row.representative()]].representative();
  return representative != row.representative() ? "=#" + std::to_string(representative + 1) : "";
}

// Whether the listing has a model (then the plans have all-layer times).
bool HasModel(const PlanListing& listing) {
  return listing.model != nullptr && listing.model->layers > 0;
}

// "fwd+bwd" as the words for one training step's share of it.
std::string PassWords(Pass pass) {
  switch (pass) {
    case Pass::kForward:
      return "forward";
    case Pass::kBackward:
      return "backward";
    default:
      return "forward+backward";
  }
}

// The table's lines on the model and the TP/DP degrees ("" without them).
std::string ModelLines(const planner::PlanContext& ctx, const PlanListing& listing) {
  if (listing.model == nullptr) return "";
  const ModelView& m = *listing.model;
  std::string out;
  if (m.layers > 0) out += "model:    " + m.description + "\n";
  if (!m.degrees.trivial()) {
    out += "parallel: " + m.degrees.Describe(ctx.topology.num_gpus()) + "; each GPU computes " +
           std::to_string(ctx.workload.q_heads) + "/" + std::to_string(ctx.workload.kv_heads) +
           " heads; the cluster above is one CP group's\n";
  }
  if (m.layers > 0) {
    const std::string pass = PassWords(ctx.workload.pass);
    out += "times:    'time' is one attention layer (" + pass + "); 'all layers' is the model's " +
           std::to_string(m.layers) + " attention layers in one training step (" + pass + ")";
    if (m.window_layers > 0 && m.window_layers < m.layers) {
      out += ",\n          " + std::to_string(m.layers - m.window_layers) +
             " under the workload's mask and " + std::to_string(m.window_layers) +
             " under window:" + std::to_string(m.window) + ", ranked by that sum";
    }
    out += "\n";
    // The rest of the step (GEMMs, TP/DP/PP, the whole model's memory) is another command's.
    out +=
        "step:     the whole training step and its TP x CP x DP x PP search: meshplan step "
        "--model " +
        m.name + " --search\n";
  }
  return out;
}

// The lines on the framework: its best plan's settings, and the best plan over every scheme when
// it is faster ("" for --framework any).
std::string FrameworkLines(const planner::PlanContext& ctx, const planner::SearchResult& result,
                           const PlanListing& listing) {
  if (listing.framework == planner::Framework::kAny) return "";
  const std::string title(planner::FrameworkTitle(listing.framework));
  std::string out = "\nframework: " + title + " runs " + std::to_string(result.ranked.size()) +
                    " of the " + std::to_string(listing.valid_any) + " valid plans";
  const auto best = std::find_if(result.ranked.begin(), result.ranked.end(),
                                 [](const planner::Estimate& e) { return e.fits; });
  if (best == result.ranked.end()) return out + "; none of them fits\n";
  out += "; #" + std::to_string(best - result.ranked.begin() + 1) + " runs with:\n  " +
         RunOf(ctx, listing, *best).settings + "\n";
  if (best->window_params) {
    out += "  (the sliding-window layers run " +
           std::string(SchemeName(best->window_params->scheme)) + " " +
           planner::DescribeParams(*best->window_params) + ", timed so)\n";
  }
  if (std::string note = RunOf(ctx, listing, *best).note; !note.empty()) out += note + "\n";
  if (!listing.framework_note.empty()) out += listing.framework_note + "\n";
  const planner::Estimate* any = listing.best_any;
  if (any != nullptr) {
    // Estimates of one layer on both sides (the best over every scheme was not replayed).
    const double mine = best->time_s, theirs = any->time_s;
    if (theirs < mine) {
      out += "best over every scheme: " + std::string(SchemeName(any->params.scheme)) + " " +
             planner::DescribeParams(any->params) + ", " + Fixed(mine / theirs, 2) +
             "x faster per layer than #" + std::to_string(best - result.ranked.begin() + 1) + " (" +
             RunOf(ctx, listing, *any).why_not + ")\n";
    } else {
      out += "best over every scheme: the same time; the framework loses nothing\n";
    }
  }
  return out;
}

}  // namespace

std::string ClusterLine(const planner::PlanContext& ctx) {
  const Topology& t = ctx.topology;
  std::string levels;
  for (const NetworkLevel& l : t.levels) {
    levels += (levels.empty() ? "" : ", ") + l.name + " " + std::to_string(l.group_size) + " x " +
              Fixed(l.bandwidth_bytes_per_s / 1e9, 0) + " GB/s" +
              (l.kind == LinkKind::kFullMesh ? " per link" : "") + FabricsText(l);
  }
  return std::to_string(t.num_gpus()) + " x " + t.gpu.model + " (" + t.name + ": " + levels +
         "; attention kernel " + t.gpu.attention_kernel + ")";
}

std::string PlanTable(const planner::PlanContext& ctx, const planner::SearchResult& result,
                      const PlanListing& listing) {
  std::string out = "cluster:  " + ClusterLine(ctx) + "\n";
  out += "workload: " + ctx.workload.Describe() + "\n";
  out += ModelLines(ctx, listing);
  if (ctx.reserved_memory_bytes > 0) {
    out += "memory:   " + FormatBytes(ctx.reserved_memory_bytes) +
           " per GPU reserved for the rest of the model\n";
  }
  out += "\n";
  const Listed listed = List(result, listing);
  const bool wide = listing.wide;
  const bool simulated = AnySimulated(result);
  const bool ties =
      std::any_of(listed.rows.begin(), listed.rows.end(),
                  [&](const planner::PlanGroup& g) { return !TiesCell(listed, g).empty(); });
  // Compact: a "fits" column only when a listed plan does not fit.
  const bool fits_column =
      wide || std::any_of(listed.rows.begin(), listed.rows.end(), [&](const planner::PlanGroup& g) {
        return !result.ranked[g.representative()].fits;
      });
  const auto bytes = [wide](double b) { return wide ? FormatBytes(b) : ShortBytes(b); };
  // Times with four significant digits resolve 0.1%, finer than the 0.5% that makes plans
  // equivalent; the exposed part of a time needs three.
  const auto seconds = [wide](double s, int digits) {
    return wide ? FormatSeconds(s) : ShortSeconds(s, digits);
  };

  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> header = {"#"};
  if (wide) {
    header.insert(header.end(), {"scheme", "parameters"});
  } else {
    header.push_back("plan");
  }
  const bool model = HasModel(listing);
  header.push_back("time");
  if (simulated) header.push_back("simulated");
  if (model) header.push_back("all layers");
  if (wide) header.push_back("compute");
  header.push_back(wide ? "exposed comm" : "exposed");
  for (const NetworkLevel& l : ctx.topology.levels)
    header.push_back(wide ? "bytes/GPU " + l.name : l.name);
  if (wide) header.push_back("imbalance");
  header.push_back(wide ? "peak mem" : "mem");
  if (fits_column) header.push_back("fits");
  if (ties) header.push_back("tie");
  rows.push_back(header);
  for (const planner::PlanGroup& g : listed.rows) {
    const size_t i = g.representative();
    const planner::Estimate& e = result.ranked[i];
    std::vector<std::string> row = {std::to_string(i + 1)};
    const std::string scheme(SchemeName(e.params.scheme));
    if (wide) {
      row.insert(row.end(), {scheme, planner::DescribeParams(e.params)});
    } else {
      row.push_back(scheme + " " + planner::DescribeParams(e.params));
    }
    row.push_back(seconds(e.time_s, 4));
    if (simulated) row.push_back(e.simulated_s >= 0 ? seconds(e.simulated_s, 4) : "-");
    if (model) {
      row.push_back(e.model_layers_s >= 0 && std::isfinite(e.model_layers_s)
                        ? seconds(e.model_layers_s, 4)
                        : "-");
    }
    if (wide) row.push_back(seconds(e.compute_s, 4));
    row.push_back(seconds(e.exposed_comm_s, 3));
    for (size_t l = 0; l < ctx.topology.levels.size(); ++l) {
      row.push_back(l < e.level_bytes.size() ? bytes(e.level_bytes[l]) : "-");
    }
    if (wide) row.push_back(Fixed(e.imbalance(), 2) + "x");
    row.push_back(bytes(e.peak_memory_bytes));
    if (fits_column) row.push_back(e.fits ? "yes" : "NO");
    if (ties) row.push_back(TiesCell(listed, g));
    rows.push_back(row);
  }
  out += Columns(rows, "", /*rule=*/true);
  if (listed.rows.size() < listed.total_rows) {
    const size_t more = listed.total_rows - listed.rows.size();
    out += "... " + std::to_string(more) + " more " + (listing.all_variants ? "plan" : "row") +
           (more == 1 ? "" : "s") + " (--top 0 shows all)\n";
  }
  if (!wide) {
    std::string levels;
    for (const NetworkLevel& l : ctx.topology.levels)
      levels += (levels.empty() ? "" : ", ") + l.name;
    out += "\n" + levels +
           ": bytes sent per GPU over that network level (busiest GPU); mem: peak memory per GPU\n";
  }
  if (model &&
      std::any_of(listed.rows.begin(), listed.rows.end(), [&](const planner::PlanGroup& g) {
        return !std::isfinite(result.ranked[g.representative()].model_layers_s);
      })) {
    out += "all layers '-': the plan has no valid form for the model's window layers (window:" +
           std::to_string(listing.model->window) + "), so it cannot serve the model\n";
  }
  if (ties) {
    const std::string within = Fixed(planner::kEquivalentTimeTolerance * 100, 1) + "%";
    out += (wide ? "\n" : "") + (listing.all_variants
                                     ? "tie: =#K equivalent to plan K (time within " + within +
                                           " of it, same bytes per GPU)\n"
                                     : "tie: +N more plans within " + within +
                                           " of the row's time with the same bytes per GPU "
                                           "(--all-variants lists every plan)\n");
  }
  const auto best = std::find_if(result.ranked.begin(), result.ranked.end(),
                                 [](const planner::Estimate& e) { return e.fits; });
  std::string summary = std::to_string(result.evaluated) + " candidates evaluated, " +
                        std::to_string(result.ranked.size()) + " valid";
  if (!listing.all_variants) {
    summary += " in " + std::to_string(listed.groups.size()) +
               (listed.groups.size() == 1 ? " group" : " groups");
  }
  const std::string verdict =
      best == result.ranked.end()
          ? "none fits in " + FormatBytes(ctx.topology.gpu.memory_bytes) + " per GPU"
          : "best that fits: #" + std::to_string(best - result.ranked.begin() + 1) + " " +
                std::string(SchemeName(best->params.scheme)) + " " +
                planner::DescribeParams(best->params);
  // The summary stays within the default table's 120 columns: a long plan name goes on its own
  // line.
  constexpr size_t kColumns = 120;
  out += "\n" + summary + (summary.size() + 2 + verdict.size() > kColumns ? ";\n" : "; ") +
         verdict + "\n";
  out += ModelErrorLine(result, listed);
  out += FrameworkLines(ctx, result, listing);
  if (!result.rejected.empty()) {
    out += "\nnot applicable:\n";
    for (const planner::Estimate& e : result.rejected) {
      out += "  " + std::string(SchemeName(e.params.scheme)) + ": " + e.reason + "\n";
    }
  }
  return out;
}

namespace {

// `close`: whether the model cannot tell the plan apart from the best (WithinModelError).
void PlanObject(const planner::PlanContext& ctx, const planner::Estimate& e, size_t index,
                size_t group, bool simulated, bool close, const PlanListing& listing,
                JsonWriter& j) {
  j.Key("rank");
  j.Int(static_cast<long long>(index + 1));
  j.Key("group");
  j.Int(static_cast<long long>(group + 1));
  j.Key("scheme");
  j.String(SchemeName(e.params.scheme));
  j.Key("parameters");
  j.String(planner::DescribeParams(e.params));
  j.Key("layout");
  j.String(LayoutName(e.params.layout));
  j.Key("tile_a");
  j.Int(e.params.tile_a);
  j.Key("tile_b");
  j.Int(e.params.tile_b);
  j.Key("ulysses");
  j.Int(e.params.ulysses);
  j.Key("ring");
  j.Int(e.params.ring);
  j.Key("window");
  j.Int(e.params.window);
  j.Key("cache_forward");
  j.Bool(e.params.cache_forward);
  j.Key("placement");
  j.BeginArray();
  for (const auto& p : e.params.placement) j.String(p);
  j.EndArray();
  if (listing.framework != planner::Framework::kAny) {
    const planner::FrameworkRun run = RunOf(ctx, listing, e);
    j.Key("framework_settings");
    j.String(run.settings);
    if (!run.note.empty()) {
      j.Key("framework_note");
      j.String(run.note);
    }
    if (e.window_params) {  // the sliding-window layers run another plan (planner::Estimate)
      j.Key("window_layers_plan");
      j.String(std::string(SchemeName(e.window_params->scheme)) + " " +
               planner::DescribeParams(*e.window_params));
    }
  }
  j.Key("time_s");
  j.Number(e.time_s);
  if (e.model_layers_s >= 0) {  // --model: every attention layer of one training step
    j.Key("all_layers_s");
    if (std::isfinite(e.model_layers_s)) {
      j.Number(e.model_layers_s);
    } else {
      j.Raw("null");
    }
  }
  if (simulated) {
    j.Key("simulated_s");
    if (e.simulated_s >= 0) {
      j.Number(e.simulated_s);
    } else {
      j.Raw("null");
    }
  }
  j.Key("compute_s");
  j.Number(e.compute_s);
  j.Key("exposed_comm_s");
  j.Number(e.exposed_comm_s);
  j.Key("bytes_per_gpu");
  j.Bytes(e.bytes_per_rank);
  j.Key("bytes_per_gpu_by_level");
  j.BeginObject();
  for (size_t l = 0; l < ctx.topology.levels.size() && l < e.level_bytes.size(); ++l) {
    j.Key(ctx.topology.levels[l].name);
    j.Bytes(e.level_bytes[l]);
  }
  j.EndObject();
  j.Key("flops_max");
  j.Number(e.flops_max);
  j.Key("flops_mean");
  j.Number(e.flops_mean);
  j.Key("imbalance");
  j.Number(e.imbalance());
  j.Key("peak_memory_bytes");
  j.Bytes(e.peak_memory_bytes);
  j.Key("fits");
  j.Bool(e.fits);
  j.Key("within_model_error");
  j.Bool(close);
}

}  // namespace

std::string PlanJson(const planner::PlanContext& ctx, const planner::SearchResult& result,
                     const PlanListing& listing, const ExplainedPlan* explain) {
  const Listed listed = List(result, listing);
  JsonWriter j;
  j.BeginObject();
  j.Key("cluster");
  j.BeginObject();
  j.Key("name");
  j.String(ctx.topology.name);
  j.Key("gpus");
  j.Int(ctx.topology.num_gpus());
  j.Key("gpu");
  j.String(ctx.topology.gpu.model);
  j.Key("attention_kernel");
  j.String(ctx.topology.gpu.attention_kernel);
  j.Key("levels");
  j.BeginArray();
  for (const NetworkLevel& l : ctx.topology.levels) j.String(l.name);
  j.EndArray();
  j.EndObject();
  j.Key("workload");
  WriteWorkloadJson(j, ctx.workload);
  if (listing.model != nullptr) {
    const ModelView& m = *listing.model;
    if (m.layers > 0) {
      j.Key("model");
      j.BeginObject();
      j.Key("name");
      j.String(m.name);
      j.Key("source");
      j.String(m.source);
      j.Key("layers");
      j.Int(m.layers);
      j.Key("window_layers");
      j.Int(m.window_layers);
      j.Key("window");
      j.Int(m.window);
      j.Key("q_heads");
      j.Int(m.q_heads);
      j.Key("kv_heads");
      j.Int(m.kv_heads);
      j.Key("time_s_is");
      j.String("one attention layer, " + std::string(PassName(ctx.workload.pass)));
      j.Key("all_layers_s_is");
      j.String("all " + std::to_string(m.layers) + " attention layers of one training step, " +
               std::string(PassName(ctx.workload.pass)));
      j.EndObject();
    }
    j.Key("parallel");
    j.BeginObject();
    j.Key("tp");
    j.Int(m.degrees.tp);
    j.Key("cp");
    j.Int(ctx.topology.num_gpus());
    j.Key("dp");
    j.Int(m.degrees.dp);
    j.Key("gpus");
    j.Int(m.degrees.tp * m.degrees.dp * ctx.topology.num_gpus());
    j.EndObject();
  }
  if (listing.framework != planner::Framework::kAny) {
    j.Key("framework");
    j.BeginObject();
    j.Key("name");
    j.String(planner::FrameworkName(listing.framework));
    j.Key("title");
    j.String(planner::FrameworkTitle(listing.framework));
    j.Key("note");
    j.String(listing.framework_note);
    if (listing.best_any != nullptr) {
      const planner::Estimate& any = *listing.best_any;
      j.Key("best_over_every_scheme");
      j.BeginObject();
      j.Key("scheme");
      j.String(SchemeName(any.params.scheme));
      j.Key("parameters");
      j.String(planner::DescribeParams(any.params));
      j.Key("time_s");
      j.Number(any.time_s);
      j.Key("why_not_this_framework");
      j.String(RunOf(ctx, listing, any).why_not);
      j.EndObject();
    }
    j.EndObject();
  }
  j.Key("evaluated");
  j.Int(result.evaluated);
  j.Key("valid");
  j.Int(static_cast<long long>(result.ranked.size()));
  j.Key("groups");
  j.Int(static_cast<long long>(listed.groups.size()));
  j.Key("equivalence");
  j.BeginObject();
  j.Key("time_tolerance");
  j.Number(planner::kEquivalentTimeTolerance);
  j.Key("same_bytes_per_gpu");
  j.Bool(true);
  j.EndObject();
  j.Key("model_error");
  j.Number(planner::kModelErrorFraction);
  j.Key("all_variants");
  j.Bool(listing.all_variants);
  j.Key("plans");
  j.BeginArray();
  const bool simulated = AnySimulated(result);
  const std::vector<size_t> close = planner::WithinModelError(result.ranked);
  const auto is_close = [&](size_t i) {
    return std::find(close.begin(), close.end(), i) != close.end();
  };
  for (const planner::PlanGroup& row : listed.rows) {
    const size_t i = row.representative();
    j.BeginObject();
    PlanObject(ctx, result.ranked[i], i, listed.group_of[i], simulated, is_close(i), listing, j);
    if (!listing.all_variants) {
      j.Key("equivalents");
      j.BeginArray();
      for (size_t m = 1; m < row.members.size(); ++m) {
        const size_t k = row.members[m];
        j.BeginObject();
        PlanObject(ctx, result.ranked[k], k, listed.group_of[k], simulated, is_close(k), listing,
                   j);
        j.EndObject();
      }
      j.EndArray();
    }
    j.EndObject();
  }
  j.EndArray();
  j.Key("not_applicable");
  j.BeginArray();
  for (const planner::Estimate& e : result.rejected) {
    j.BeginObject();
    j.Key("scheme");
    j.String(SchemeName(e.params.scheme));
    j.Key("reason");
    j.String(e.reason);
    j.EndObject();
  }
  j.EndArray();
  if (explain != nullptr) {
    j.Key("explain");
    PlanExplainJson(ctx, result.ranked.at(static_cast<size_t>(explain->plan_number - 1)),
                    explain->plan_number, explain->schedule, j);
  }
  j.EndObject();
  return j.str() + "\n";
}

std::string PlanCsv(const planner::PlanContext& ctx, const planner::SearchResult& result,
                    const PlanListing& listing) {
  const Listed listed = List(result, listing);
  const bool simulated = AnySimulated(result);
  std::string out = "rank,scheme,parameters,time_s,";
  if (simulated) out += "simulated_s,";
  out += "compute_s,exposed_comm_s,bytes_per_gpu";
  for (const NetworkLevel& l : ctx.topology.levels) out += ",bytes_" + l.name;
  out += ",flops_max,imbalance,peak_memory_bytes,fits,group,equivalents";
  // --model / --tp / --dp: the model, the degrees and the time of all the model's layers.
  const ModelView* model = listing.model;
  if (model != nullptr) out += ",model,layers,tp,cp,dp,all_layers_s";
  const bool framework = listing.framework != planner::Framework::kAny;
  if (framework) out += ",framework,framework_settings";
  out += "\n";
  for (const planner::PlanGroup& row : listed.rows) {
    const size_t i = row.representative();
    const planner::Estimate& e = result.ranked[i];
    const planner::PlanGroup& group = listed.groups[listed.group_of[i]];
    out += std::to_string(i + 1) + "," + std::string(SchemeName(e.params.scheme)) + ",\"" +
           planner::DescribeParams(e.params) + "\"," + CsvNumber(e.time_s) + ",";
    // Empty field: not simulated.
    if (simulated) out += (e.simulated_s >= 0 ? CsvNumber(e.simulated_s) : "") + ",";
    out += CsvNumber(e.compute_s) + "," + CsvNumber(e.exposed_comm_s) + "," +
           CsvBytes(e.bytes_per_rank);
    for (size_t l = 0; l < ctx.topology.levels.size(); ++l) {
      out += "," + CsvBytes(l < e.level_bytes.size() ? e.level_bytes[l] : 0.0);
    }
    out += "," + CsvNumber(e.flops_max) + "," + CsvNumber(e.imbalance()) + "," +
           CsvBytes(e.peak_memory_bytes) + "," + (e.fits ? "true" : "false") + "," +
           std::to_string(listed.group_of[i] + 1) + "," + std::to_string(group.equivalents());
    if (model != nullptr) {
      out += "," + CsvField(model->name) + "," + std::to_string(model->layers) + "," +
             std::to_string(model->degrees.tp) + "," + std::to_string(ctx.topology.num_gpus()) +
             "," + std::to_string(model->degrees.dp) + "," +
             (e.model_layers_s >= 0 && std::isfinite(e.model_layers_s) ? CsvNumber(e.model_layers_s)
                                                                       : "");
    }
    if (framework) {
      out += "," + std::string(planner::FrameworkName(listing.framework)) + "," +
             CsvField(RunOf(ctx, listing, e).settings);
    }
    out += "\n";
  }
  return out;
}

std::string EstimateToml(const planner::Estimate& e) {
  char buffer[512];
  std::snprintf(buffer, sizeof buffer,
                "[estimate]\n# Informational: the planner's prediction when this plan was made.\n"
                "time_s = %.9g\ncompute_s = %.9g\nexposed_comm_s = %.9g\nbytes_per_gpu = %.0f\n"
                "peak_memory_bytes = %.0f\nfits = %s\n",
                e.time_s, e.compute_s, e.exposed_comm_s, e.bytes_per_rank, e.peak_memory_bytes,
                e.fits ? "true" : "false");
  std::string out = buffer;
  if (e.simulated_s >= 0) {
    std::snprintf(buffer, sizeof buffer, "simulated_s = %.9g\n", e.simulated_s);
    out += buffer;
  }
  return out;
}

}  // namespace meshplan::report
