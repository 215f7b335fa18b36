// What `meshplan simulate` reports about one replayed plan (docs/simulator.md): the simulated
// time against the planner's estimate, per-rank spreads, the slowest ranks and the network
// levels, as a table, JSON, a CSV row or a metric,value list.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/cluster/topology.h"
#include "core/plan/plan.h"
#include "simulator/plan_simulation.h"

namespace meshplan::report {

// The smallest, mean and largest value of one per-rank quantity.
struct Spread {
  double min = 0, mean = 0, max = 0;
};

// Everything the three formats show. Holds pointers: the plan, topology and simulation must
// outlive it.
struct SimulationReport {
  const Plan* plan = nullptr;
  const Topology* topology = nullptr;
  const sim::PlanSimulation* sim = nullptr;
  std::string plan_file;
  double wall_s = 0;  // whole command: evaluate, expand, replay
  Spread compute, exposed, idle, bytes;
  std::vector<int64_t> slowest;  // ranks, latest finish first
  // --model: the model, its attention layers and their time in one training step under this
  // plan (the global layers at the simulated time, sliding ones at the window's replay).
  std::string model;
  int64_t model_layers = 0;
  double all_layers_s = -1;

  double simulated_s() const { return sim->result.total_s; }
  double estimated_s() const { return sim->estimate.time_s; }
  // (simulated - estimated) / estimated in percent; 0 when there is no estimate.
  double difference_pct() const {
    return estimated_s() > 0 ? (simulated_s() - estimated_s()) / estimated_s() * 100.0 : 0.0;
  }
  double finish_s(int64_t rank) const {
    return simulated_s() - sim->result.ranks[static_cast<size_t>(rank)].idle_s;
  }
  double events_per_s() const {
    return sim->replay_wall_s > 0 ? static_cast<double>(sim->result.events) / sim->replay_wall_s
                                  : 0.0;
  }
};

// The report of `sim` (a replay of `plan` from `plan_file` on `topology` that took wall_s in
// all), listing the `ranks_shown` slowest ranks (0: all; ties by rank number).
SimulationReport MakeSimulationReport(const Plan& plan, const Topology& topology,
                                      const sim::PlanSimulation& sim, const std::string& plan_file,
                                      double wall_s, int ranks_shown);

// Human-readable summary.
std::string SimulationTable(const SimulationReport& r);
// One JSON object (and a newline); "trace" names trace_file when it is not empty.
std::string SimulationJson(const SimulationReport& r, const std::string& trace_file);
// The run as one CSV row after a header line (left out when `with_header` is false, to append to
// a file that has one): the plan and workload, simulated and estimated times, the per-rank
// spreads, bytes per level ("name=bytes;..." in one field, so every cluster has the same columns),
// the replay's size and speed. Numbers at full precision, bytes as integers.
std::string SimulationCsv(const SimulationReport& r, bool with_header = true);
// The same figures one per row under "metric,value" (`simulate --format metrics`).
std::string SimulationMetricsCsv(const SimulationReport& r);

}  // namespace meshplan::report
