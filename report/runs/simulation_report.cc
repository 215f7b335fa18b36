#include "report/runs/simulation_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <utility>

#include "core/base/csv.h"
#include "core/base/json_writer.h"
#include "core/base/units.h"
#include "planner/schemes/registry.h"
#include "report/format/csv_record.h"
#include "report/format/text_table.h"
#include "report/format/workload_json.h"

namespace meshplan::report {
namespace {

template <typename Field>
Spread SpreadOf(const std::vector<sim::RankStats>& ranks, Field field) {
  Spread s;
  if (ranks.empty()) return s;
  s.min = s.max = field(ranks[0]);
  double sum = 0;
  for (const sim::RankStats& r : ranks) {
    const double v = field(r);
    s.min = std::min(s.min, v);
    s.max = std::max(s.max, v);
    sum += v;
  }
  s.mean = sum / static_cast<double>(ranks.size());
  return s;
}

std::string SignedPercent(double pct) { return (pct >= 0 ? "+" : "") + Fixed(pct, 1) + "%"; }

void SpreadJson(JsonWriter& j, const char* key, const Spread& s) {
  j.Key(key);
  j.BeginObject();
  j.Key("min");
  j.Number(s.min);
  j.Key("mean");
  j.Number(s.mean);
  j.Key("max");
  j.Number(s.max);
  j.EndObject();
}

}  // namespace

SimulationReport MakeSimulationReport(const Plan& plan, const Topology& topology,
                                      const sim::PlanSimulation& sim, const std::string& plan_file,
                                      double wall_s, int ranks_shown) {
  SimulationReport r;
  r.plan = &plan;
  r.topology = &topology;
  r.sim = &sim;
  r.plan_file = plan_file;
  r.wall_s = wall_s;
  const auto& ranks = sim.result.ranks;
  r.compute = SpreadOf(ranks, [](const sim::RankStats& s) { return s.compute_s; });
  r.exposed = SpreadOf(ranks, [](const sim::RankStats& s) { return s.exposed_comm_s; });
  r.idle = SpreadOf(ranks, [](const sim::RankStats& s) { return s.idle_s; });
  r.bytes = SpreadOf(ranks, [](const sim::RankStats& s) { return s.bytes_sent; });
  std::vector<int64_t> order(ranks.size());
  std::iota(order.begin(), order.end(), int64_t{0});
  // Latest finish = least idle; ties by rank number.
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return ranks[static_cast<size_t>(a)].idle_s < ranks[static_cast<size_t>(b)].idle_s;
  });
  if (ranks_shown > 0 && order.size() > static_cast<size_t>(ranks_shown))
    order.resize(static_cast<size_t>(ranks_shown));
  r.slowest = std::move(order);
  return r;
}

std::string SimulationTable(const SimulationReport& r) {
  const sim::SimResult& res = r.sim->result;
  const Topology& t = *r.topology;
  std::string out = "plan:      " + std::string(SchemeName(r.plan->params.scheme)) + " " +
                    planner::DescribeParams(r.plan->params) + " (" + r.plan_file + ")\n";
  out += "workload:  " + r.plan->workload.Describe() + "\n";
  out += "cluster:   " + std::to_string(t.num_gpus()) + " x " + t.gpu.model + " (" + t.name + ", " +
         t.source + "; attention kernel " + t.gpu.attention_kernel + ")\n\n";
  out += "simulated: " + FormatSeconds(r.simulated_s()) + " (one attention layer)\n";
  out += "estimated: " + FormatSeconds(r.estimated_s()) + " (planner); simulated is " +
         SignedPercent(r.difference_pct()) + "\n";
  if (r.all_layers_s >= 0) {
    out += "all layers: " + FormatSeconds(r.all_layers_s) + " for the " +
           std::to_string(r.model_layers) + " attention layers of " + r.model +
           " in one training step (simulated)\n";
  }
  out += "\n";
  out += "per rank over " + std::to_string(res.ranks.size()) + " ranks:\n";
  out += Columns(
      {{"", "min", "mean", "max"},
       {"compute", FormatSeconds(r.compute.min), FormatSeconds(r.compute.mean),
        FormatSeconds(r.compute.max)},
       {"exposed comm", FormatSeconds(r.exposed.min), FormatSeconds(r.exposed.mean),
        FormatSeconds(r.exposed.max)},
       {"idle", FormatSeconds(r.idle.min), FormatSeconds(r.idle.mean), FormatSeconds(r.idle.max)},
       {"bytes sent", FormatBytes(r.bytes.min), FormatBytes(r.bytes.mean),
        FormatBytes(r.bytes.max)}},
      "  ");
  out += "\nslowest ranks:\n";
  std::vector<std::vector<std::string>> rows = {
      {"rank", "GPU", "finish", "compute", "exposed comm", "idle", "bytes sent"}};
  for (int64_t rank : r.slowest) {
    const sim::RankStats& s = res.ranks[static_cast<size_t>(rank)];
    rows.push_back(
        {std::to_string(rank), std::to_string(r.sim->rank_to_gpu[static_cast<size_t>(rank)]),
         FormatSeconds(r.finish_s(rank)), FormatSeconds(s.compute_s),
         FormatSeconds(s.exposed_comm_s), FormatSeconds(s.idle_s), FormatBytes(s.bytes_sent)});
  }
  out += Columns(rows, "  ");
  out += "\nnetwork levels:\n";
  rows = {{"level", "bytes", "utilisation", "busiest link"}};
  for (const sim::LevelStats& l : res.levels) {
    rows.push_back({l.name, FormatBytes(l.bytes), Fixed(l.utilization * 100, 1) + "%",
                    l.busiest_link.empty()
                        ? "-"
                        : l.busiest_link + ": " + FormatBytes(l.busiest_link_bytes) + ", " +
                              Fixed(l.busiest_link_utilization * 100, 1) + "%"});
  }
  out += Columns(rows, "  ");
  out += "\ncritical path: " + res.critical_path + "\n";
  out += "symmetry: " + r.sim->symmetry + "\n";
  out += "replay: " + std::to_string(res.events) + " events, " + std::to_string(res.flows) +
         " flows in " + FormatSeconds(r.sim->replay_wall_s) + " (" +
         Fixed(r.events_per_s() / 1e6, 2) + "M events/s); " + FormatSeconds(r.wall_s) +
         " with evaluation and expansion\n";
  return out;
}

std::string SimulationJson(const SimulationReport& r, const std::string& trace_file) {
  const sim::SimResult& res = r.sim->result;
  JsonWriter j;
  j.BeginObject();
  j.Key("plan");
  j.BeginObject();
  j.Key("file");
  j.String(r.plan_file);
  j.Key("scheme");
  j.String(SchemeName(r.plan->params.scheme));
  j.Key("parameters");
  j.String(planner::DescribeParams(r.plan->params));
  j.Key("workload");
  WriteWorkloadJson(j, r.plan->workload);
  j.EndObject();
  j.Key("topology");
  j.BeginObject();
  j.Key("name");
  j.String(r.topology->name);
  j.Key("source");
  j.String(r.topology->source);
  j.Key("gpus");
  j.Int(r.topology->num_gpus());
  j.EndObject();
  j.Key("simulated_s");
  j.Number(r.simulated_s());
  j.Key("estimated_s");
  j.Number(r.estimated_s());
  j.Key("difference_pct");
  j.Number(r.difference_pct());
  if (r.all_layers_s >= 0) {
    j.Key("model");
    j.String(r.model);
    j.Key("layers");
    j.Int(r.model_layers);
    j.Key("all_layers_s");
    j.Number(r.all_layers_s);
  }
  j.Key("per_rank");
  j.BeginObject();
  SpreadJson(j, "compute_s", r.compute);
  SpreadJson(j, "exposed_comm_s", r.exposed);
  SpreadJson(j, "idle_s", r.idle);
  SpreadJson(j, "bytes_sent", r.bytes);
  j.EndObject();
  j.Key("slowest_ranks");
  j.BeginArray();
  for (int64_t rank : r.slowest) {
    const sim::RankStats& s = res.ranks[static_cast<size_t>(rank)];
    j.BeginObject();
    j.Key("rank");
    j.Int(rank);
    j.Key("gpu");
    j.Int(r.sim->rank_to_gpu[static_cast<size_t>(rank)]);
    j.Key("finish_s");
    j.Number(r.finish_s(rank));
    j.Key("compute_s");
    j.Number(s.compute_s);
    j.Key("exposed_comm_s");
    j.Number(s.exposed_comm_s);
    j.Key("idle_s");
    j.Number(s.idle_s);
    j.Key("bytes_sent");
    j.Bytes(s.bytes_sent);
    j.EndObject();
  }
  j.EndArray();
  j.Key("levels");
  j.BeginArray();
  for (const sim::LevelStats& l : res.levels) {
    j.BeginObject();
    j.Key("name");
    j.String(l.name);
    j.Key("bytes");
    j.Bytes(l.bytes);
    j.Key("utilization");
    j.Number(l.utilization);
    if (!l.busiest_link.empty()) {
      j.Key("busiest_link");
      j.BeginObject();
      j.Key("name");
      j.String(l.busiest_link);
      j.Key("bytes");
      j.Bytes(l.busiest_link_bytes);
      j.Key("utilization");
      j.Number(l.busiest_link_utilization);
      j.EndObject();
    }
    j.EndObject();
  }
  j.EndArray();
  j.Key("critical_path");
  j.String(res.critical_path);
  j.Key("symmetry");
  j.String(r.sim->symmetry);
  j.Key("symmetric");
  j.Bool(r.sim->symmetric);
  j.Key("events");
  j.Int(res.events);
  j.Key("flows");
  j.Int(res.flows);
  j.Key("replay_wall_s");
  j.Number(r.sim->replay_wall_s);
  j.Key("events_per_s");
  j.Number(r.events_per_s());
  j.Key("wall_s");
  j.Number(r.wall_s);
  if (!trace_file.empty()) {
    j.Key("trace");
    j.String(trace_file);
  }
  j.EndObject();
  return j.Take() + "\n";
}

std::string SimulationCsv(const SimulationReport& r, bool with_header) {
  const sim::SimResult& res = r.sim->result;
  const double absent = std::numeric_limits<double>::quiet_NaN();  // an empty field
  CsvRecord c;
  c.Add("plan", r.plan_file);
  c.Add("scheme", std::string(SchemeName(r.plan->params.scheme)));
  c.Add("parameters", planner::DescribeParams(r.plan->params));
  AddWorkloadColumns(r.plan->workload, c);
  c.Add("topology", r.topology->name);
  c.AddInt("gpus", r.topology->num_gpus());
  c.AddNumber("simulated_s", r.simulated_s());
  c.AddNumber("estimated_s", r.estimated_s());
  c.AddNumber("difference_pct", r.difference_pct());
  const bool model = r.all_layers_s >= 0;
  c.Add("model", model ? r.model : "");
  c.Add("layers", model ? std::to_string(r.model_layers) : "");
  c.AddNumber("all_layers_s", model ? r.all_layers_s : absent);
  for (const auto& [name, s] : {std::pair<const char*, const Spread*>{"compute_s", &r.compute},
                                {"exposed_comm_s", &r.exposed},
                                {"idle_s", &r.idle}}) {
    c.AddNumber(std::string(name) + "_min", s->min);
    c.AddNumber(std::string(name) + "_mean", s->mean);
    c.AddNumber(std::string(name) + "_max", s->max);
  }
  c.AddInt("bytes_sent_min", std::llround(r.bytes.min));
  c.AddInt("bytes_sent_mean", std::llround(r.bytes.mean));
  c.AddInt("bytes_sent_max", std::llround(r.bytes.max));
  std::string bytes, utilization;
  for (const sim::LevelStats& l : res.levels) {
    bytes += (bytes.empty() ? "" : ";") + l.name + "=" + std::to_string(std::llround(l.bytes));
    utilization += (utilization.empty() ? "" : ";") + l.name + "=" + CsvNumber(l.utilization);
  }
  c.Add("bytes_by_level", bytes);
  c.Add("utilization_by_level", utilization);
  c.Add("critical_path", res.critical_path);
  c.Add("symmetry", r.sim->symmetry);
  c.AddInt("events", res.events);
  c.AddInt("flows", res.flows);
  c.AddNumber("replay_wall_s", r.sim->replay_wall_s);
  c.AddNumber("events_per_s", r.events_per_s());
  c.AddNumber("wall_s", r.wall_s);
  return (with_header ? c.Header() : "") + c.Row();
}

std::string SimulationMetricsCsv(const SimulationReport& r) {
  const sim::SimResult& res = r.sim->result;
  std::vector<std::pair<std::string, std::string>> rows = {
      {"plan", r.plan_file},
      {"scheme", std::string(SchemeName(r.plan->params.scheme))},
      {"parameters", planner::DescribeParams(r.plan->params)},
      {"topology", r.topology->name},
      {"gpus", std::to_string(r.topology->num_gpus())},
      {"simulated_s", CsvNumber(r.simulated_s())},
      {"estimated_s", CsvNumber(r.estimated_s())},
      {"difference_pct", CsvNumber(r.difference_pct())},
  };
  if (r.all_layers_s >= 0) {
    rows.push_back({"model", r.model});
    rows.push_back({"layers", std::to_string(r.model_layers)});
    rows.push_back({"all_layers_s", CsvNumber(r.all_layers_s)});
  }
  auto spread = [&rows](const std::string& name, const Spread& s) {
    rows.push_back({name + "_min", CsvNumber(s.min)});
    rows.push_back({name + "_mean", CsvNumber(s.mean)});
    rows.push_back({name + "_max", CsvNumber(s.max)});
  };
  spread("compute_s", r.compute);
  spread("exposed_comm_s", r.exposed);
  spread("idle_s", r.idle);
  spread("bytes_sent", r.bytes);
  for (const sim::LevelStats& l : res.levels) {
    rows.push_back({"bytes_" + l.name, CsvBytes(l.bytes)});
    rows.push_back({"utilization_" + l.name, CsvNumber(l.utilization)});
    if (!l.busiest_link.empty()) {
      rows.push_back({"busiest_link_utilization_" + l.name, CsvNumber(l.busiest_link_utilization)});
    }
  }
  rows.push_back({"critical_path", res.critical_path});
  rows.push_back({"symmetry", r.sim->symmetry});
  rows.push_back({"events", std::to_string(res.events)});
  rows.push_back({"flows", std::to_string(res.flows)});
  rows.push_back({"replay_wall_s", CsvNumber(r.sim->replay_wall_s)});
  rows.push_back({"events_per_s", CsvNumber(r.events_per_s())});
  rows.push_back({"wall_s", CsvNumber(r.wall_s)});
  std::string out = "metric,value\n";
  for (const auto& [key, value] : rows) out += CsvField(key) + "," + CsvField(value) + "\n";
  return out;
}

}  // namespace meshplan::report
