#include "capacity/bench.h"

#include <algorithm>
#include <utility>

#include "capacity/sweep.h"
#include "core/cost/attention_flops.h"
#include "executor/host_memory.h"
#include "executor/plan_run.h"
#include "executor/timing/repeat.h"
#include "planner/schemes/registry.h"
#include "planner/search.h"

namespace meshplan::capacity {
namespace {

std::string PointName(const BenchRow& row) {
  return "bench " + row.mask + " " + std::to_string(row.seq_len) + " tokens " +
         std::string(SchemeName(row.scheme));
}

// A preflight refusal (executor/host_memory.h CheckHostMemory) rather than a broken run.
bool IsMemoryRefusal(const Status& status) {
  return status.code() == ErrorCode::kInvalidInput &&
         status.message().find("host memory") != std::string::npos;
}

// Runs one planned point on the CP group's cluster; fills the measured part of `row`.
void RunPoint(const BenchSpec& spec, const planner::PreparedRequest& point, BenchRow* row) {
  const planner::PlanContext ctx(point.workload, point.cluster);
  Plan plan = planner::MakePlan(ctx, row->params);
  plan.tp = spec.degrees.tp;
  plan.dp = spec.degrees.dp;
  const bool host = spec.config.backend == exec::Backend::kCpu;
  exec::HostBudget budget;
  budget.limit_bytes = spec.memory_limit_bytes;
  budget.limit_source = spec.memory_limit_source;
  budget.ranks_in_process = host ? row->ranks : 0;
  budget.keep_outputs = false;
  exec::ResetPeakResident();
  auto run = exec::PreparePlanRun(plan, PointName(*row), point.cluster, {"", spec.seed},
                                  spec.config.run.type, budget);
  if (!run.ok()) {
    row->outcome = IsMemoryRefusal(run.status()) ? BenchOutcome::kSkipped : BenchOutcome::kFailed;
    row->reason = run.status().message();
    return;
  }
  row->flops = WorkloadFlops(run->plan.workload);
  row->modelled_rank_peak_bytes =
      host ? exec::HostRankBytes(run->plan.workload, run->modelled_rank_peak_bytes)
           : run->modelled_rank_peak_bytes;
  exec::ExecuteConfig config = spec.config;
  config.keep_outputs = false;
  auto repeated = exec::ExecuteRepeated(*run, config, spec.repeat);
  if (!repeated.ok()) {
    row->outcome = BenchOutcome::kFailed;
    row->reason = repeated.status().message();
    return;
  }
  const exec::RepeatStats& s = repeated->runs.stats;
  row->outcome = BenchOutcome::kRan;
  row->median_s = s.median_s;
  row->min_s = s.min_s;
  row->max_s = s.max_s;
  row->spread = s.spread;
  const std::vector<int64_t>& peaks = repeated->first.peak_bytes;
  row->rank_peak_bytes =
      peaks.empty() ? 0 : static_cast<double>(*std::max_element(peaks.begin(), peaks.end()));
  row->process_peak_rss_bytes = exec::PeakResidentBytes();
}

}  // namespace

std::string_view BenchOutcomeName(BenchOutcome outcome) {
  switch (outcome) {
    case BenchOutcome::kRan:
      return "ran";
    case BenchOutcome::kNoPlan:
      return "no plan";
    case BenchOutcome::kSkipped:
      return "skipped";
    case BenchOutcome::kFailed:
      break;
  }
  return "failed";
}

double BenchRow::MeasuredTflopsPerRank() const {
  return median_s > 0 && ranks > 0 ? flops / static_cast<double>(ranks) / median_s / 1e12 : 0;
}

double BenchRow::PredictedTflopsPerRank() const {
  return predicted_s > 0 && ranks > 0 ? flops / static_cast<double>(ranks) / predicted_s / 1e12 : 0;
}

double BenchRow::ErrorPercent() const { return exec::ErrorPercent(median_s, predicted_s); }

Result<std::vector<BenchRow>> RunBench(const BenchSpec& spec, const BenchProgress& progress) {
  if (spec.masks.empty()) return Status::Invalid("bench: no masks");
  if (spec.seq_lens.empty()) return Status::Invalid("bench: no sequence lengths");
  MESHPLAN_RETURN_IF_ERROR(exec::CheckRepeat(spec.repeat).WithContext("repeat"));
  std::vector<Scheme> schemes = spec.schemes;
  if (schemes.empty()) schemes.assign(planner::AllSchemes().begin(), planner::AllSchemes().end());
  const double points = static_cast<double>(spec.masks.size()) *
                        static_cast<double>(spec.seq_lens.size()) *
                        static_cast<double>(schemes.size());
  if (points > static_cast<double>(kMaxBenchPoints)) {
    return Status::Invalid("bench: " + std::to_string(static_cast<int64_t>(points)) +
                           " points (masks x lengths x schemes) exceed the limit of " +
                           std::to_string(kMaxBenchPoints));
  }
  const int64_t total = static_cast<int64_t>(points);
  std::vector<BenchRow> rows;
  int64_t done = 0;
  for (const BenchMask& mask : spec.masks) {
    // The planning half is a sweep with replay: each scheme's best plan and its simulated time.
    SweepSpec sweep;
    sweep.topologies = {spec.topology};
    sweep.seq_lens = spec.seq_lens;
    sweep.schemes = schemes;
    sweep.base = spec.base;
    sweep.base.mask = mask.mask;
    sweep.model = spec.model;
    sweep.tps = {spec.degrees.tp};
    sweep.dp = spec.degrees.dp;
    sweep.framework = spec.framework;
    sweep.seq_rounding = spec.seq_rounding;
    sweep.partial_dtype_given = spec.partial_dtype_given;
    sweep.attention_kernel_given = spec.attention_kernel_given;
    sweep.simulate = true;
    auto planned = RunSweep(sweep);
    if (!planned.ok()) return planned.status().WithContext("bench: mask " + mask.name);
    for (const SweepRow& point : *planned) {
      BenchRow row;
      row.mask = mask.name;
      row.seq_len = point.seq_len;
      row.scheme = point.scheme;
      row.ranks = point.gpus;
      if (!point.valid) {
        row.outcome = BenchOutcome::kNoPlan;
        row.reason = point.reason;
      } else {
        row.params = point.params;
        row.predicted_s = point.simulated_s;
        // The sweep's request again: the same cluster and workload (the documents' draw is
        // deterministic).
        auto prepared = planner::PrepareRequest(
            SweepPointRequest(sweep, spec.topology, spec.degrees.tp, point.seq_len));
        if (!prepared.ok()) return prepared.status().WithContext("bench: mask " + mask.name);
        row.ranks = prepared->cluster.num_gpus();
        RunPoint(spec, *prepared, &row);
      }
      rows.push_back(std::move(row));
      if (progress) progress(rows.back(), ++done, total);
    }
  }
  return rows;
}

}  // namespace meshplan::capacity
