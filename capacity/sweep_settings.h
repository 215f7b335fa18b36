// What to sweep, as one layer of settings says it: a sweep file (capacity/sweep_file.h) or the
// flags given on a command line. Layers stack (Overlay); MakeSweepSpec turns the result into the
// SweepSpec that RunSweep takes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "capacity/sweep.h"
#include "core/base/status.h"
#include "core/plan/plan.h"
#include "core/workload/model_config.h"
#include "core/workload/workload_fields.h"
#include "planner/plan_request.h"

namespace meshplan::capacity {

// Every field is optional: unset leaves the choice to the layer below, and finally to the
// defaults of MakeSweepSpec.
struct SweepSettings {
  std::optional<std::vector<std::string>> topology_files;  // cluster TOML files or shipped names
  // The attention library every topology's kernel curve is taken from (Topology::
  // UseAttentionKernel); unset: each file's gpu.attention_kernel.
  std::optional<std::string> attention_kernel;
  // The framework's time per attention call for every topology (FrameworkSpec); unset: each
  // file's.
  std::optional<double> step_overhead_ms;
  std::optional<std::vector<int64_t>> gpus;
  // Tensor-parallel degrees beside context parallelism (core/workload/parallel_degrees.h);
  // unset: 1.
  std::optional<std::vector<int64_t>> tps;
  // The model (--model): each row's time for all its layers; sliding layers planned apart.
  std::optional<ModelConfig> model;
  std::optional<std::vector<int64_t>> seq_lens;
  std::optional<std::vector<Scheme>> schemes;
  WorkloadFields workload;  // seq_len is not used: seq_lens holds the sweep's lengths
  // Where the workload fields and lengths came from, for errors: the sweep file's path, "the
  // flags", both joined by " and " after Overlay, or "" (nothing set, or not said).
  std::string workload_source;
  std::optional<double> reserved_memory_bytes;
  std::optional<bool> simulate;
  // The planning choices every planning command takes (planner/plan_request.h): the framework
  // whose plans the rows keep, the rounding of each length, the data-parallel replicas.
  std::optional<planner::Framework> framework;
  std::optional<planner::SeqRounding> seq_rounding;
  std::optional<int64_t> dp;

  // Replaces the fields that `top` sets by top's (workload field by field).
  void Overlay(const SweepSettings& top);
};

// The sweep `settings` describe, with these defaults for what they leave unset: the built-in
// cluster, each topology's own size, 1M tokens (Workload::Default's length), every scheme, the
// other fields of Workload::Default, no memory reserved, no simulation. Loads the topology files
// (a shipped cluster by name, core/cluster/topology_catalog.h).
// Errors, in this order: the workload at the first sequence length is invalid ("workload: ...",
// or "SOURCE: workload: ..." with the settings' workload_source), a topology file cannot be
// loaded or a name is not a shipped cluster.
Result<SweepSpec> MakeSweepSpec(const SweepSettings& settings);

}  // namespace meshplan::capacity
