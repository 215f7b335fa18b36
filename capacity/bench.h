// `meshplan bench`: the executor over schemes x masks x sequence lengths, as the Long-Context
// Attention Benchmark (arXiv 2510.17896) measures context-parallel attention: for every point the
// best plan of each scheme on the topology (every GPU a rank), run for real (warm-up plus N timed
// runs), with its measured TFLOP/s per rank and peak memory next to the simulator's prediction
// and the planner's memory model. report/runs/bench_report.h renders the rows.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/cluster/topology.h"
#include "core/plan/plan.h"
#include "core/sequence/mask.h"
#include "core/workload/model_config.h"
#include "core/workload/parallel_degrees.h"
#include "core/workload/workload.h"
#include "executor/execute.h"
#include "planner/plan_request.h"

namespace meshplan::capacity {

struct BenchMask {
  std::string name;  // as the user wrote it ("causal", "window:512")
  Mask mask;
};

struct BenchSpec {
  Topology topology;              // plans are made and predicted on it; every GPU is a rank
  Workload base;                  // everything but seq_len and mask
  std::vector<BenchMask> masks;   // at least one
  std::vector<int64_t> seq_lens;  // at least one
  std::vector<Scheme> schemes;    // empty: every scheme
  // The planning choices beside them, as every planning command takes them (plan_request.h):
  // the ranks are one context-parallel group's GPUs (all of them without TP and DP).
  std::optional<ModelConfig> model;
  ParallelDegrees degrees;
  planner::Framework framework = planner::Framework::kAny;
  planner::SeqRounding seq_rounding = planner::SeqRounding::kAsGiven;
  bool partial_dtype_given = false;
  bool attention_kernel_given = false;  // --attention-kernel (planner::PlanRequest)
  int repeat = 3;                       // timed runs per point (exec::CheckRepeat)
  uint64_t seed = 1;                    // of the random inputs (generated per rank)
  exec::ExecuteConfig config;           // backend, transport, input type; outputs are never kept
  double memory_limit_bytes = 0;        // host preflight of each point (0: not checked)
  std::string memory_limit_source;      // for its refusals
};

// The most points (masks x lengths x schemes) one bench runs.
inline constexpr int64_t kMaxBenchPoints = 10000;

enum class BenchOutcome : uint8_t {
  kRan,      // measured
  kNoPlan,   // the scheme has no valid plan at this point (reason says why)
  kSkipped,  // the preflight refused it: it does not fit this process's memory (reason)
  kFailed,   // the run failed (reason)
};
std::string_view BenchOutcomeName(BenchOutcome outcome);

struct BenchRow {
  std::string mask;
  int64_t seq_len = 0;
  Scheme scheme;
  int64_t ranks = 0;
  BenchOutcome outcome = BenchOutcome::kNoPlan;
  std::string reason;
  SchemeParams params;     // the scheme's best plan (kRan, kSkipped, kFailed)
  double flops = 0;        // LongCA's count (core/cost/attention_flops.h) of the run's pass
  double predicted_s = 0;  // the simulator's time on the topology
  double median_s = 0, min_s = 0, max_s = 0, spread = 0;  // measured (exec::RepeatStats)
  double rank_peak_bytes = 0;           // most memory any rank's engine held (host or device)
  double modelled_rank_peak_bytes = 0;  // the planner's per-rank peak as the backend holds it
  double process_peak_rss_bytes = 0;    // this process's peak resident set during the point

  double MeasuredTflopsPerRank() const;   // flops / ranks / median_s / 1e12 (0 without a time)
  double PredictedTflopsPerRank() const;  // the same over predicted_s
  double ErrorPercent() const;            // (median - predicted) / predicted x 100
};

// Called after every point with the row and (done, total) points.
using BenchProgress = std::function<void(const BenchRow& row, int64_t done, int64_t total)>;

// Rows in order mask, sequence length, scheme. A point that cannot run is a row saying why
// (kNoPlan, kSkipped, kFailed); errors are for the spec itself (empty lists, an invalid workload,
// too many points, a bad repeat count), one line naming the point or field.
Result<std::vector<BenchRow>> RunBench(const BenchSpec& spec, const BenchProgress& progress = {});

}  // namespace meshplan::capacity
