// Flags and helpers shared by the meshplan subcommands.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/cluster/topology.h"
#include "core/plan/plan.h"
#include "core/workload/model_config.h"
#include "core/workload/parallel_degrees.h"
#include "core/workload/workload.h"
#include "core/workload/workload_fields.h"
#include "simulator/simulate.h"

namespace meshplan::tools {

// Exit codes: 0 success, 1 internal or I/O failure, 2 invalid input (file, flag, impossible plan).
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitInvalidInput = 2;

// Prints "meshplan: error: <message>" on stderr and returns the exit code for the status.
int ReportError(const Status& status);

// Workload flags as strings, so sizes like 1M and 2^20 parse with one clear error per flag.
struct WorkloadFlags {
  std::string batch = "1";
  std::string seq = "1M";
  std::string heads = "64";
  std::string kv_heads = "8";
  std::string head_dim = "128";
  std::string dtype = "bf16";
  std::string partial_dtype = "fp32";
  std::string mask = "causal";
  std::string pass = "fwd+bwd";
  std::string model;  // --model NAME|FILE: heads, KV heads, head dim and dtype from a config.json

  // Registers the flags on `app`, which it keeps to tell the flags given from their defaults.
  void Register(CLI::App& app);
  // The fields of the flags for which `given(flag)` is true (flag names as "--batch"), parsed but
  // not validated; errors name the flag.
  Result<WorkloadFields> Fields(const std::function<bool(const std::string& flag)>& given) const;
  // The same over the model's fields (--model): a flag the model sets counts only when given on
  // the command line, so a default never overrides the model. Errors: the model's file.
  Result<WorkloadFields> FieldsWithModel(
      const std::function<bool(const std::string& flag)>& include) const;
  // The model --model names (nullopt without the flag). Errors: LoadModelConfig's.
  Result<std::optional<ModelConfig>> Model() const;
  // Every flag (given or default) over the model's fields, validated ("workload: ..." when
  // inconsistent).
  Result<Workload> Build() const;
  // True when `flag` was given on the command line.
  bool Given(const std::string& flag) const;

 private:
  const CLI::App* app_ = nullptr;
};

// --tp N and --dp N: tensor parallelism and replicas beside context parallelism
// (core/workload/parallel_degrees.h).
struct ParallelFlags {
  ParallelDegrees degrees;
  void Register(CLI::App& app);
};

// --topology FILE|NAME (default: the built-in 32 x 8 H100 cluster).
// The model flags every command that predicts takes beside its cluster:
//   --attention-kernel fa2|fa3|cudnn|own  the library whose kernel curve the model uses
//                                          (default: the file's gpu.attention_kernel);
//   --step-overhead-ms X                   the framework's fixed time per attention call
//                                          (default: the file's framework.step_overhead_us).
struct ModelFlags {
  std::string attention_kernel;  // "": the file's
  double step_overhead_ms = 0;   // used when given (step_overhead_given)
  bool step_overhead_given = false;
  void Register(CLI::App& app);
  // Applies the flags given to `topology`. Errors: an unknown library or one the file has no
  // curve for (naming the file), a negative or huge --step-overhead-ms.
  Status Apply(Topology& topology) const;
};

// --topology FILE|NAME with the model flags.
struct TopologyFlag {
  std::string path;  // a file, or a shipped cluster's name
  ModelFlags model;
  // The command's -q, when it has one (set where the command registers its flags): with it the
  // file's plausibility notes are not printed.
  const bool* quiet = nullptr;
  void Register(CLI::App& app);
  Result<Topology> Load() const;
};

// A --topology value: a file, or a shipped cluster's name (core/cluster/topology_catalog.h); an
// error about a name names the flag. Topology::PlausibilityNotes are printed on stderr as notes,
// unless `quiet` (the command's -q: nothing on stderr but errors).
Result<Topology> LoadTopologyFlag(const std::string& name_or_path, bool quiet = false);
// Topology::PlausibilityNotes on stderr, one "meshplan: note: SOURCE: ..." line each.
void PrintPlausibilityNotes(const Topology& topology);

// The topology a plan file runs on: `topology_flag` when given, else the plan's own source when
// it is the built-in cluster or a file that exists here and still has the name the plan records
// (a different name is an error naming plan_file and both names); otherwise an error asking for
// --topology (naming plan_file).
// The plan's attention kernel (Plan::attention_kernel) is made the active one unless `model`
// names another; the model flags given are applied. A plan made with --tp/--dp (Plan::tp, dp)
// gets one context-parallel group's share of the cluster (ContextParallelCluster).
Result<Topology> PlanTopology(const std::string& plan_file, const std::string& topology_flag,
                              const Plan& plan, const ModelFlags& model = {}, bool quiet = false);

// An output path a later WriteFileAtomically can use (core/base/atomic_file.h CheckOutputPath).
// Lets a long command refuse a bad -o before it starts working.
Status CheckWritableOutput(const std::string& path);

// A command's report where -o says: stdout when `out` is empty, else `out` written atomically
// with a line on stderr ("meshplan: wrote the report to OUT") unless `quiet`. Returns the exit
// code.
int EmitReport(const std::string& out, const std::string& text, bool quiet);

// A CSV report (`csv`: a header line, then rows) where -o says, with --append: onto an existing
// file whose first line is the same header (anything else there is refused, exit 2, naming the
// file and both headers), else as a new file; on stdout without the header, for `>> FILE`.
// The file is rewritten atomically either way. Returns the exit code.
int EmitCsvReport(const std::string& out, const std::string& csv, bool append, bool quiet);

// Prints "meshplan: note: SOURCE: ..." on stderr when `topology`'s kernel curve does not carry
// over to `head_dim` (GpuSpec::HeadDimCaveat), unless `quiet`.
void NoteHeadDim(const Topology& topology, int64_t head_dim, bool quiet);
// Prints "meshplan: note: SOURCE: ..." on stderr when `topology` is a calibration whose machine
// moved while it was measured (CalibrationRecord::SpeedCaveat), and when it combines draws whose
// predictions spread further than kSpeedSpreadNote (CalibrationRecord::DrawCaveat), unless
// `quiet`.
void NoteCalibrationSpeed(const Topology& topology, bool quiet);

// --max-memory of a replay (simulate, sweep --simulate): sets options->memory_limit_bytes and
// its source for the message; "" is the host memory available now (/proc/meminfo, cgroup).
Status SetReplayMemoryLimit(const std::string& max_memory, sim::SimOptions* options);

// Whether two output paths name one file: equal paths, or paths to one existing file (hard or
// symbolic links included). Empty paths name none.
bool SameOutputFile(const std::string& a, const std::string& b);

// --format table|json|csv
Status CheckFormat(const std::string& format, const std::vector<std::string>& allowed);

// Splits "a,b,c".
std::vector<std::string> SplitList(const std::string& text);

}  // namespace meshplan::tools
