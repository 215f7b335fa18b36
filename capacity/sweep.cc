#include "capacity/sweep.h"

#include <memory>
#include <utility>

#include "capacity/scale_topology.h"
#include "core/base/units.h"
#include "planner/schemes/registry.h"
#include "simulator/simulation_timer.h"

namespace meshplan::capacity {
namespace {

std::string PointName(const std::string& topology, int64_t gpus, int64_t seq_len) {
  return topology + " @" + std::to_string(gpus) + " GPUs, S=" + FormatCount(seq_len);
}

// A topology of the sweep at one of its sizes.
struct Cluster {
  const Topology* original;
  Topology scaled;
};

// Every topology at every size, so that a bad GPU count fails before any search runs.
Result<std::vector<Cluster>> ScaledClusters(const SweepSpec& spec) {
  std::vector<Cluster> clusters;
  for (const Topology& t : spec.topologies) {
    MESHPLAN_RETURN_IF_ERROR(t.SupportsDType(spec.base.dtype));
    if (spec.gpus.empty()) {
      clusters.push_back({&t, t});
      continue;
    }
    for (int64_t g : spec.gpus) {
      MESHPLAN_ASSIGN_OR_RETURN(auto scaled, ScaleTopology(t, g));
      clusters.push_back({&t, std::move(scaled)});
    }
  }
  return clusters;
}

// Errors before any point is planned: too many points, a model the mask cannot take.
Status CheckSweep(const SweepSpec& spec, size_t tps) {
  const size_t sizes = spec.gpus.empty() ? 1 : spec.gpus.size();
  const double points = static_cast<double>(spec.topologies.size() * sizes * tps) *
                        static_cast<double>(spec.seq_lens.size());
  if (points > static_cast<double>(kMaxSweepPoints)) {
    return Status::Invalid("sweep: " + std::to_string(spec.topologies.size()) + " topologies x " +
                           std::to_string(sizes) + " GPU counts x " +
                           (tps > 1 ? std::to_string(tps) + " TP degrees x " : "") +
                           std::to_string(spec.seq_lens.size()) +
                           " sequence lengths is more than the " + std::to_string(kMaxSweepPoints) +
                           " points one sweep plans");
  }
  if (spec.model) {
    Workload w = spec.base;
    if (SetSequenceLength(w, spec.seq_lens.front()).ok()) {
      auto layers = planner::MakeModelWorkloads(*spec.model, w);
      if (!layers.ok()) return layers.status();
    }
  }
  return Status::Ok();
}

// The row of scheme `scheme` at a point whose request was answered.
Result<SweepRow> AnsweredRow(const SweepSpec& spec, const planner::PlanAnswer& answer,
                             Scheme scheme, SweepRow row) {
  row.seq_len = answer.workload().seq_len;
  const planner::Estimate* best = answer.BestOf(scheme);
  if (best == nullptr) {
    row.reason = answer.WhyNone(scheme);
    return row;
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
    auto simulated = sim::SimulatedSeconds(answer.ctx, best->params, replay);
    if (!simulated.ok()) {
      return simulated.status().WithContext(PointName(row.topology, row.gpus, row.seq_len) +
                                            ": simulating " + std::string(SchemeName(scheme)) +
                                            " " + planner::DescribeParams(best->params));
    }
    row.simulated_s = *simulated;
  }
  return row;
}

}  // namespace

planner::PlanRequest SweepPointRequest(const SweepSpec& spec, const Topology& cluster, int64_t tp,
                                       int64_t seq_len) {
  planner::PlanRequest request;
  request.topology = cluster;
  request.workload = spec.base;
  // The caller has checked the length (RunSweep: the point's workload error names the point).
  (void)SetSequenceLength(request.workload, seq_len);
  request.model = spec.model;
  request.degrees = ParallelDegrees{tp, spec.dp};
  request.framework = spec.framework;
  request.partial_dtype_given = spec.partial_dtype_given;
  request.attention_kernel_given = spec.attention_kernel_given;
  request.seq_rounding = spec.seq_rounding;
  request.reserved_bytes = spec.reserved_memory_bytes;
  request.search.schemes = spec.schemes;
  return request;
}

Result<std::vector<SweepRow>> RunSweep(const SweepSpec& spec, const Progress& progress,
                                       const StopRequested& stop) {
  if (spec.topologies.empty()) return Status::Invalid("sweep: no topology given");
  if (spec.seq_lens.empty()) return Status::Invalid("sweep: no sequence length given");
  std::vector<Scheme> schemes = spec.schemes;
  if (schemes.empty()) schemes.assign(planner::AllSchemes().begin(), planner::AllSchemes().end());
  const std::vector<int64_t> tps = spec.tps.empty() ? std::vector<int64_t>{1} : spec.tps;
  MESHPLAN_RETURN_IF_ERROR(CheckSweep(spec, tps.size()));
  MESHPLAN_ASSIGN_OR_RETURN(std::vector<Cluster> clusters, ScaledClusters(spec));

  const int64_t total = static_cast<int64_t>(clusters.size() * tps.size() * spec.seq_lens.size());
  int64_t done = 0;
  std::vector<SweepRow> rows;
  rows.reserve(static_cast<size_t>(total) * schemes.size());
  for (const Cluster& cluster : clusters) {
    const int64_t gpus = cluster.scaled.num_gpus();
    for (int64_t tp : tps) {
      for (int64_t seq : spec.seq_lens) {
        if (stop && stop()) return rows;
        Workload w = spec.base;
        Status st = SetSequenceLength(w, seq);
        if (st.ok()) st = w.Validate();
        if (!st.ok()) {
          return st.WithContext(PointName(cluster.original->name, gpus, seq) + ": workload");
        }
        SweepRow point;
        point.topology = cluster.original->name;
        point.gpus = gpus;
        point.seq_len = seq;
        point.tp = tp;
        // One request over every scheme; its ranking is fits-first then time (with a model, the
        // time of all its layers), so a scheme's first ranked plan is its best. A point the
        // request cannot be answered at (e.g. a TP degree its heads cannot take) is a row per
        // scheme with the reason.
        auto answer = planner::AnswerPlanRequest(SweepPointRequest(spec, cluster.scaled, tp, seq));
        for (Scheme scheme : schemes) {
          SweepRow row = point;
          row.scheme = scheme;
          if (!answer.ok()) {
            row.reason = answer.status().message();
            rows.push_back(std::move(row));
            continue;
          }
          MESHPLAN_ASSIGN_OR_RETURN(row, AnsweredRow(spec, **answer, scheme, std::move(row)));
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
