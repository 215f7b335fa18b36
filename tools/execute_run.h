// What `meshplan execute` prepares before a run and what it does after one (check, outputs,
// report); tools/execute_command.cc handles flags, preparation and the transports.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "core/cluster/topology.h"
#include "core/plan/plan.h"
#include "core/plan/schedule.h"
#include "executor/calibration/speed_check.h"
#include "executor/execute.h"
#include "executor/io/tensor.h"
#include "executor/output_check.h"
#include "executor/plan_run.h"
#include "executor/timing/repeat.h"
#include "executor/transport/transport.h"

namespace meshplan::tools {

struct ExecuteFlags {
  std::string plan;
  std::string topology;
  std::string backend = "cpu";
  std::string transport;  // cpu: threads (default) or mpi; cuda: local (default), nccl or mpi
  std::string dtype;      // cuda: bf16 or fp16 (default: the plan's dtype when 16-bit, else bf16)
  std::string kernels = "auto";  // cuda: auto, tensor or simt
  int devices = 1;  // cuda, transport local: GPUs the virtual ranks spread over (0: all)
  bool check = false;
  uint64_t seed = 1;
  std::string inputs;
  std::string outputs;
  double timeout_s = 30;
  std::string format = "table";  // table, json or csv
  std::string out;               // -o: the report into this file (atomically); "": stdout
  bool append = false;           // --append: CSV rows onto -o's file (or stdout without a header)
  bool errors = false;  // --errors: percentage errors even against a cluster that is not this one
  std::string inject_fail;          // "RANK:OP"
  std::string inject_silent;        // "RANK"; empty: not given
  bool check_dependencies = false;  // the engine's happens-before checker
  std::string repeat =
      "1";             // timed runs (1..1000; a warm-up run first when > 1), parsed by RepeatCount
  bool quiet = false;  // no progress or notes on stderr (errors still go there)
  std::string max_memory;  // host memory the run may use (e.g. 16G); empty: what is available
};

// A run ready to go: everything a user can get wrong has been checked before it is built.
struct Prepared {
  exec::PlanRun run;  // the plan as run, its schedule, inputs and check tolerance
  Topology topology;
  exec::ExecuteConfig config;  // backend, transport, run options (inputs' type, timeouts, faults)
  std::string precision = "computed in fp32";  // how the run treats numbers, for the report
};

// Checks the flags (before anything is loaded, and before MPI starts).
Status CheckFlags(const ExecuteFlags& flags);
// --repeat as a count of timed runs (checked: 1 <= N <= exec::kMaxRepeat; errors name the flag).
Result<int> RepeatCount(const ExecuteFlags& flags);
// Progress of repeated runs on stderr ("run 3/10: 12.3 ms"); empty (no progress) for one run or
// --quiet.
exec::RunObserver RunProgress(const ExecuteFlags& flags);
// --timeout-s as a duration.
std::chrono::milliseconds Timeout(const ExecuteFlags& flags);
// --timeout-s and the fault injection flags into `options`; the rank and op they name must exist
// in `schedule` (errors name the flag).
Status SetRunOptions(const ExecuteFlags& flags, const Schedule& schedule,
                     exec::RunOptions* options);
// Whether a run copies out its global outputs: only --check and --outputs read them.
bool KeepsOutputs(const ExecuteFlags& flags);
// --max-memory (or the memory available now) and what this process will hold of a run of `ranks`.
Result<exec::HostBudget> HostBudgetOf(const ExecuteFlags& flags, int64_t ranks);
// Flags, plan file, topology, backend configuration, schedule and inputs.
Result<Prepared> PrepareExecution(const ExecuteFlags& flags);
// A note on stderr (unless --quiet) when a CPU run's machine load differs from the one its
// calibrated topology was measured at (CalibrationRecord::LoadCaveat).
void NoteCalibrationConditions(const ExecuteFlags& flags, const Prepared& p);
// One line on stderr when the plan's pass bwd runs as fwd+bwd (none with --quiet).
// A note on stderr (unless --quiet) before CPU threads runs estimated above
// exec::kLongRunSeconds: the FLOPs and the time they take at least on this machine.
void NoteLongRun(const ExecuteFlags& flags, const Prepared& p);
void NoteWidenedPass(const ExecuteFlags& flags, const Prepared& p);

// After successful runs (on rank 0 for MPI): check the first timed run's `outputs` against the
// reference, write them, print the report of the timed `runs` (the median run's timeline). `run`
// says what ran where ("backend cpu, transport threads, 4 ranks (...)"); `stale` what the run's
// start removed from --outputs DIR (named when the check then fails). Returns the exit code.
class StaleOutputs;
int FinishExecution(const ExecuteFlags& flags, const Prepared& p,
                    const exec::AttentionTensors<float>& outputs, const exec::RepeatedRuns& runs,
                    const std::string& run, StaleOutputs& stale,
                    const std::vector<int64_t>& rank_peak_bytes = {},
                    const exec::SpeedCheck& speed = {});

// The machine's speed check for a CPU run in this process (threads) against `p`'s cluster where
// it is a calibration with a reference block (exec::SpeedCheckFor); an empty check otherwise.
exec::SpeedCheck SpeedCheckOf(const ExecuteFlags& flags, const Prepared& p);
// Times the check's reference block into *seconds; where it cannot (memory), a note and 0, which
// leaves the check unmeasured. Nothing for an empty check.
void TimeReferenceBlock(const exec::SpeedCheck& speed, bool quiet, double* seconds);

// The output files an earlier run left in --outputs DIR (o.npy ... dv.npy, nothing else). They
// are removed when this run starts (exec::ExecuteConfig::on_start: after every check, so an
// error found before the run leaves DIR alone), so that a failure or a signal on any rank, under
// any transport, can never leave them beside some of this run's files; a run that then fails
// names them at the end of its error line.
class StaleOutputs {
 public:
  explicit StaleOutputs(const ExecuteFlags& flags) : dir_(flags.outputs) {}
  // Removes them now (nothing without --outputs).
  void Remove();
  // What to append to a failed run's error line: "; removed o.npy, lse.npy of an earlier run
  // from DIR", or "" when there were none. Removes any that are still there first.
  std::string Suffix();

 private:
  std::string dir_;
  std::vector<std::string> removed_;
};

// --backend cuda (tools/execute_cuda.cc). Without CUDA in the build these return an error.
bool CudaBackendBuilt();
// The CUDA backend's kernels of an engine configuration, shared by execute, bench and calibrate:
// checks --kernels (auto, cudnn, tensor or simt; the error names the flag) and sets the backend,
// config->run.path and config->run.type (bf16 or fp16).
Status SetCudaKernels(const std::string& kernels, exec::InputType type,
                      exec::ExecuteConfig* config);
// Checks --dtype, --kernels and --devices and sets the CUDA part of p->config (the input type
// follows --dtype, else the plan's dtype when 16-bit, else bf16; the kernels by SetCudaKernels)
// and the precision note.
Status PrepareCuda(const ExecuteFlags& flags, const Plan& plan, Prepared* p);
// The run line of the report for a CUDA run ("backend cuda (device), kernels, transport, ranks").
std::string CudaRunLine(const ExecuteFlags& flags, const Prepared& p, const std::string& device);

}  // namespace meshplan::tools
