#include "report/sweep.h"

#include <charconv>
#include <memory>
#include <utility>

#include "core/csv.h"
#include "core/json_writer.h"
#include "core/units.h"
#include "planner/context.h"
#include "planner/search.h"
#include "planner/strategy.h"
#include "simulator/simulate.h"

namespace meshplan::report {
namespace {

// Shortest text that reads back as the same double (as JsonWriter::Number).
std::string ShortNumber(double value) {
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, result.ptr);
}

std::string PointName(const std::string& topology, int64_t gpus, int64_t seq_len) {
  return topology + " @" + std::to_string(gpus) + " GPUs, S=" + FormatCount(seq_len);
}

// Replays `params` in the simulator and returns the simulated step time.
Result<double> SimulatedSeconds(const planner::PlanContext& ctx, const SchemeParams& params) {
  const std::unique_ptr<planner::Strategy> strategy = planner::MakeStrategy(params.scheme);
  auto schedule = strategy->Expand(ctx, params);
  if (!schedule.ok()) return schedule.status();
  const std::vector<RankDim> dims = params.RankDims();
  MESHPLAN_RETURN_IF_ERROR(ValidatePlacement(dims, params.placement));
  const Placement placement(dims, params.placement);
  std::vector<int64_t> rank_to_gpu(static_cast<size_t>(schedule->num_ranks));
  for (int64_t r = 0; r < schedule->num_ranks; ++r) rank_to_gpu[static_cast<size_t>(r)] = placement.GpuOf(r);
  sim::SimOptions options;
  options.record_op_times = false;
  auto result = sim::Simulate(*schedule, ctx.topology, rank_to_gpu, ctx.workload.dtype, options);
  if (!result.ok()) return result.status();
  return result->total_s;
}

}  // namespace

Result<Topology> ScaleTopology(const Topology& topology, int64_t gpus) {
  if (topology.levels.empty()) return Status::Invalid(topology.name + ": topology has no network level");
  const int outer = topology.num_levels() - 1;
  const int64_t inner = outer > 0 ? topology.Span(outer - 1) : 1;
  if (gpus <= 0 || gpus % inner != 0) {
    return Status::Invalid(topology.name + ": cannot scale to " + std::to_string(gpus) +
                           " GPUs: not a positive multiple of the " + std::to_string(inner) + " GPUs of one '" +
                           (outer > 0 ? topology.levels[outer - 1].name : std::string("gpu")) + "' group");
  }
  if (gpus == topology.num_gpus()) return topology;
  Topology scaled = topology;
  NetworkLevel& level = scaled.levels.back();
  level.group_size = gpus / inner;
  if (level.kind == LinkKind::kTorus && !level.torus_dims.empty()) {
    // The last torus dimension absorbs the change; the others stay.
    int64_t others = 1;
    for (size_t i = 0; i + 1 < level.torus_dims.size(); ++i) others *= level.torus_dims[i];
    if (level.group_size % others != 0) {
      return Status::Invalid(topology.name + ": cannot scale to " + std::to_string(gpus) + " GPUs: the torus level '" +
                             level.name + "' needs a multiple of " + std::to_string(others * inner) + " GPUs");
    }
    level.torus_dims.back() = level.group_size / others;
  }
  scaled.name = topology.name + "@" + std::to_string(gpus);
  if (Status st = scaled.Validate(); !st.ok()) {
    return st.WithContext(topology.name + ": scaled to " + std::to_string(gpus) + " GPUs");
  }
  return scaled;
}

Result<std::vector<SweepRow>> RunSweep(const SweepSpec& spec, const Progress& progress) {
  if (spec.topologies.empty()) return Status::Invalid("sweep: no topology given");
  if (spec.seq_lens.empty()) return Status::Invalid("sweep: no sequence length given");
  std::vector<Scheme> schemes = spec.schemes;
  if (schemes.empty()) schemes.assign(std::begin(kAllSchemes), std::end(kAllSchemes));

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
      auto scaled = ScaleTopology(t, g);
      if (!scaled.ok()) return scaled.status();
      clusters.push_back({&t, std::move(scaled).value()});
    }
  }

  const int64_t total = static_cast<int64_t>(clusters.size() * spec.seq_lens.size());
  int64_t done = 0;
  std::vector<SweepRow> rows;
  rows.reserve(static_cast<size_t>(total) * schemes.size());
  planner::SearchOptions options;
  options.schemes = schemes;
  for (const Cluster& cluster : clusters) {
    const int64_t gpus = cluster.scaled.num_gpus();
    for (int64_t seq : spec.seq_lens) {
      Workload w = spec.base;
      w.seq_len = seq;
      if (Status st = w.Validate(); !st.ok()) {
        return st.WithContext(PointName(cluster.original->name, gpus, seq) + ": workload");
      }
      const planner::PlanContext ctx(w, cluster.scaled, spec.reserved_memory_bytes);
      // One search over every scheme; ranked is fits-first then time, so a scheme's first
      // ranked plan is its best.
      const planner::SearchResult result = planner::Search(ctx, options);
      for (Scheme scheme : schemes) {
        SweepRow row;
        row.topology = cluster.original->name;
        row.gpus = gpus;
        row.seq_len = seq;
        row.scheme = scheme;
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
        if (spec.simulate) {
          auto simulated = SimulatedSeconds(ctx, best->params);
          if (!simulated.ok()) {
            return simulated.status().WithContext(PointName(cluster.original->name, gpus, seq) + ": simulating " +
                                                  std::string(SchemeName(scheme)) + " " + best->params.Describe());
          }
          row.simulated_s = *simulated;
        }
        rows.push_back(std::move(row));
      }
      ++done;
      if (progress) progress(done, total);
    }
  }
  return rows;
}

std::string SweepCsv(const std::vector<SweepRow>& rows) {
  std::string out =
      "topology,gpus,seq_len,scheme,valid,parameters,time_s,compute_s,exposed_comm_s,comm_share,bytes_per_gpu,"
      "peak_memory_bytes,fits,simulated_s,reason\n";
  for (const SweepRow& r : rows) {
    out += CsvField(r.topology) + "," + std::to_string(r.gpus) + "," + std::to_string(r.seq_len) + "," +
           std::string(SchemeName(r.scheme)) + "," + (r.valid ? "true" : "false") + ",";
    if (r.valid) {
      out += CsvField(r.params.Describe()) + "," + ShortNumber(r.time_s) + "," + ShortNumber(r.compute_s) + "," +
             ShortNumber(r.exposed_comm_s) + "," + ShortNumber(r.comm_share) + "," + ShortNumber(r.bytes_per_gpu) +
             "," + ShortNumber(r.peak_memory_bytes) + "," + (r.fits ? "true" : "false") + ",";
      // Empty field: not simulated.
      if (r.simulated_s >= 0) out += ShortNumber(r.simulated_s);
      out += ",\n";
    } else {
      out += ",,,,,,,,," + CsvField(r.reason) + "\n";
    }
  }
  return out;
}

std::string SweepJson(const std::vector<SweepRow>& rows) {
  JsonWriter json;
  json.Reserve(rows.size() * 320 + 16);
  json.BeginObject();
  json.Key("rows");
  json.BeginArray();
  for (const SweepRow& r : rows) {
    json.BeginObject();
    json.Key("topology");
    json.String(r.topology);
    json.Key("gpus");
    json.Int(r.gpus);
    json.Key("seq_len");
    json.Int(r.seq_len);
    json.Key("scheme");
    json.String(SchemeName(r.scheme));
    json.Key("valid");
    json.Bool(r.valid);
    if (!r.valid) {
      json.Key("reason");
      json.String(r.reason);
      json.EndObject();
      continue;
    }
    json.Key("parameters");
    json.String(r.params.Describe());
    json.Key("time_s");
    json.Number(r.time_s);
    json.Key("compute_s");
    json.Number(r.compute_s);
    json.Key("exposed_comm_s");
    json.Number(r.exposed_comm_s);
    json.Key("comm_share");
    json.Number(r.comm_share);
    json.Key("bytes_per_gpu");
    json.Number(r.bytes_per_gpu);
    json.Key("peak_memory_bytes");
    json.Number(r.peak_memory_bytes);
    json.Key("fits");
    json.Bool(r.fits);
    if (r.simulated_s >= 0) {
      json.Key("simulated_s");
      json.Number(r.simulated_s);
    }
    json.EndObject();
  }
  json.EndArray();
  json.EndObject();
  std::string text = json.Take();
  text += '\n';
  return text;
}

}  // namespace meshplan::report
