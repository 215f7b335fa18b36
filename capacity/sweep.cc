#include "capacity/sweep.h"

#include <memory>
#include <utility>

#include "capacity/scale_topology.h"
#include "core/parallel_degrees.h"
#include "core/units.h"
#include "planner/context.h"
#include "planner/model_layers.h"
#include "planner/schemes/registry.h"
#include "planner/search.h"
#include "simulator/simulation_timer.h"

namespace meshplan::capacity {
namespace {

std::string PointName(const std::string& topology, int64_t gpus, int64_t seq_len) {
  return topology + " @" + std::to_string(gpus) + " GPUs, S=" + FormatCount(seq_len);
}

}  // namespace

Result<std::vector<SweepRow>> RunSweep(const SweepSpec& spec, const Progress& progress) {
  if (spec.topologies.empty()) return Status::Invalid("sweep: no topology given");
  if (spec.seq_lens.empty()) return Status::Invalid("sweep: no sequence length given");
  std::vector<Scheme> schemes = spec.schemes;
  if (schemes.empty()) schemes.assign(planner::AllSchemes().begin(), planner::AllSchemes().end());

  const size_t sizes = spec.gpus.empty() ? 1 : spec.gpus.size();
  const std::vector<int64_t> tps = spec.tps.empty() ? std::vector<int64_t>{1} : spec.tps;
  const double points = static_cast<double>(spec.topologies.size() * sizes * tps.size()) *
                        static_cast<double>(spec.seq_lens.size());
  if (points > static_cast<double>(kMaxSweepPoints)) {
    return Status::Invalid("sweep: " + std::to_string(spec.topologies.size()) + " topologies x " +
                           std::to_string(sizes) + " GPU counts x " +
                           (tps.size() > 1 ? std::to_string(tps.size()) + " TP degrees x " : "") +
                           std::to_string(spec.seq_lens.size()) +
                           " sequence lengths is more than the " + std::to_string(kMaxSweepPoints) +
                           " points one sweep plans");
  }
  // Scale every topology first, so that a bad GPU count fails before any search runs.
  struct Cluster {
    const Topology* original;
    Topology scaled;
  };
  std::vector<Cluster> clusters;
  for (const Topology& t : spec.topologies) {
    if (Status st = t.SupportsDType(spec.base.dtype); !st.ok()) return st;
    if (spec.gpus.empty()) {
      clusters.push_back({&t, t});
      continue;
    }
    for (int64_t g : spec.gpus) {
      MESHPLAN_ASSIGN_OR_RETURN(auto scaled, ScaleTopology(t, g));
      clusters.push_back({&t, std::move(scaled)});
    }
  }

  const int64_t total = static_cast<int64_t>(clusters.size() * tps.size() * spec.seq_lens.size());
  int64_t done = 0;
  std::vector<SweepRow> rows;
  rows.reserve(static_cast<size_t>(total) * schemes.size());
  planner::SearchOptions options;
  options.schemes = schemes;
  for (const Cluster& cluster : clusters) {
    const int64_t gpus = cluster.scaled.num_gpus();
    for (int64_t tp : tps) {
      // TP beside CP: one CP group's share of the cluster; a degree it cannot take makes that
      // point's rows invalid with the reason.
      const auto cp_cluster = ContextParallelCluster(cluster.scaled, ParallelDegrees{tp, 1});
      for (int64_t seq : spec.seq_lens) {
        Workload w = spec.base;
        Status st = SetSequenceLength(w, seq);
        if (st.ok()) st = w.Validate();
        if (!st.ok()) {
          return st.WithContext(PointName(cluster.original->name, gpus, seq) + ": workload");
        }
        // A row of this point for `scheme`, its plan still to fill in.
        auto point_row = [&](Scheme scheme) {
          SweepRow row;
          row.topology = cluster.original->name;
          row.gpus = gpus;
          row.seq_len = seq;
          row.scheme = scheme;
          row.tp = tp;
          return row;
        };
        Status tp_problem = cp_cluster.ok() ? DivideHeads(w, tp) : cp_cluster.status();
        if (!tp_problem.ok()) {
          for (Scheme scheme : schemes) {
            SweepRow row = point_row(scheme);
            row.reason = tp_problem.message();
            rows.push_back(std::move(row));
          }
          ++done;
          if (progress) progress(done, total);
          continue;
        }
        // A model's layers: every layer sliding plans the point under the window alone; both
        // kinds plan under the workload's mask and time each plan's window layers apart.
        planner::ModelWorkloads layers;
        if (spec.model) {
          MESHPLAN_ASSIGN_OR_RETURN(layers, planner::MakeModelWorkloads(*spec.model, w));
          if (layers.window && layers.layers.global_layers == 0) {
            w = *layers.window;
            layers.window.reset();
          }
        }
        const planner::PlanContext ctx(w, *cp_cluster, spec.reserved_memory_bytes);
        // One search over every scheme; ranked is fits-first then time (with a model, then the
        // time of all its layers), so a scheme's first ranked plan is its best.
        planner::SearchResult result = planner::Search(ctx, options);
        if (spec.model) {
          std::unique_ptr<planner::PlanContext> window_ctx;
          if (layers.window) {
            window_ctx = std::make_unique<planner::PlanContext>(*layers.window, *cp_cluster,
                                                                spec.reserved_memory_bytes);
          }
          planner::TimeModelLayers(window_ctx.get(), layers.layers, &result);
        }
        for (Scheme scheme : schemes) {
          SweepRow row = point_row(scheme);
          const planner::Estimate* best = nullptr;
          for (const planner::Estimate& e : result.ranked) {
            if (e.params.scheme == scheme) {
              best = &e;
              break;
            }
          }
          if (best == nullptr) {
            row.reason = "no valid plan";
            for (const planner::Estimate& e : result.rejected) {
              if (e.params.scheme == scheme) row.reason = e.reason;
            }
            rows.push_back(std::move(row));
            continue;
          }
          row.valid = true;
          row.params = best->params;
          row.time_s = best->time_s;
          row.compute_s = best->compute_s;
          row.exposed_comm_s = best->exposed_comm_s;
          row.comm_share = best->time_s > 0 ? best->exposed_comm_s / best->time_s : 0.0;
          row.bytes_per_gpu = best->bytes_per_rank;
          row.peak_memory_bytes = best->peak_memory_bytes;
          row.fits = best->fits;
          row.all_layers_s = best->model_layers_s;
          if (spec.simulate) {
            sim::SimOptions replay;
            replay.memory_limit_bytes = spec.replay_memory_limit_bytes;
            replay.memory_limit_source = spec.replay_memory_limit_source;
            auto simulated = sim::SimulatedSeconds(ctx, best->params, replay);
            if (!simulated.ok()) {
              return simulated.status().WithContext(
                  PointName(cluster.original->name, gpus, seq) + ": simulating " +
                  std::string(SchemeName(scheme)) + " " + planner::DescribeParams(best->params));
            }
            row.simulated_s = *simulated;
          }
          rows.push_back(std::move(row));
        }
        ++done;
        if (progress) progress(done, total);
      }
    }
  }
  return rows;
}

}  // namespace meshplan::capacity
