// `meshplan execute PLAN --backend cpu|cuda`: run a plan's schedule for real through the execution
// engine (executor/execute.h), on the CPU (one engine per rank on its own thread, or one rank per
// MPI process under mpirun) or on CUDA GPUs (tools/execute_cuda.cc); flags become a run in
// tools/execute_prepare.cc;
// optionally check the result against plain attention in double precision, write the outputs as
// .npy files, and report the measured timeline next to the simulator's prediction.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/base/escape.h"
#include "executor/execute.h"
#include "executor/host_allocator.h"
#include "executor/plan_run.h"
#include "executor/transport/mpi_plugin.h"
#include "tools/cli_common.h"
#include "tools/commands.h"
#include "tools/execute_run.h"
#include "tools/launcher_rank.h"

namespace meshplan::tools {
namespace {

// Every rank in this process, on either backend.
int RunInProcess(const ExecuteFlags& flags) {
  auto prepared = PrepareExecution(flags);
  if (!prepared.ok()) return ReportError(prepared.status());
  const Prepared& p = *prepared;
  NoteWidenedPass(flags, p);
  NoteLongRun(flags, p);
  NoteHeadDim(p.topology, p.run.plan.workload.head_dim, flags.quiet);
  NoteCalibrationConditions(flags, p);
  StaleOutputs stale(flags);
  exec::ExecuteConfig config = p.config;
  config.on_start = [&stale] { stale.Remove(); };
  exec::SpeedCheck speed = SpeedCheckOf(flags, p);
  TimeReferenceBlock(speed, flags.quiet, &speed.before_s);
  auto run = exec::ExecuteRepeated(p.run, config, RepeatCount(flags).value(), RunProgress(flags));
  if (run.ok()) TimeReferenceBlock(speed, flags.quiet, &speed.after_s);
  if (!run.ok()) {
    if (run.status().code() == ErrorCode::kInvalidInput) {
      return ReportError(run.status().WithContext("--backend " + flags.backend));
    }
    if (run.status().code() == ErrorCode::kOutOfMemory) {
      // As std::bad_alloc anywhere (tools/exception_guard.h): exit 2, "out of memory".
      return ReportError(
          Status::OutOfMemory("out of memory: " + run.status().message() + stale.Suffix()));
    }
    std::fprintf(stderr, "meshplan: error: run failed: %s%s\n",
                 EscapeControlBytes(run.status().message()).c_str(), stale.Suffix().c_str());
    return kExitFailure;
  }
  const std::string line = flags.backend == "cuda"
                               ? CudaRunLine(flags, p, run->first.device)
                               : "backend cpu, transport threads, " +
                                     std::to_string(p.run.schedule.num_ranks) +
                                     " ranks (one engine per rank, a worker thread per stream)";
  return FinishExecution(flags, p, run->first.outputs, run->runs, line, stale,
                         run->first.peak_bytes, speed);
}

int ExitCodeOf(const Status& status) {
  return status.code() == ErrorCode::kInvalidInput || status.code() == ErrorCode::kNotFound
             ? kExitInvalidInput
             : kExitFailure;
}

// A rank other than 0 after its run: its part of the gather sent, nothing printed.
int FinishOtherRank(const ExecuteFlags& flags, exec::MpiJob& mpi) {
  exec::Transport& transport = mpi.transport();
  if (Status st = mpi.Flush(exec::Clock::now() + Timeout(flags)); !st.ok()) {
    transport.Abort(st.WithContext("rank " + std::to_string(transport.rank()) + ": gather"));
  }
  return kExitOk;
}

// Rank 0 after the job: the notes, then the check and the report of the gathered outputs.
int FinishRankZero(const ExecuteFlags& flags, const Prepared& p, const exec::JobRank& job,
                   StaleOutputs& stale) {
  NoteWidenedPass(flags, p);
  NoteHeadDim(p.topology, p.run.plan.workload.head_dim, flags.quiet);
  const std::string ranks = std::to_string(p.run.schedule.num_ranks);
  const std::string line =
      flags.backend == "cuda"
          ? "backend cuda, transport mpi (NCCL between processes), " + ranks +
                " ranks (one process per rank); rank 0: " + job.device
          : "backend cpu, transport mpi, " + ranks + " ranks (one process per rank)";
  return FinishExecution(flags, p, job.gathered->outputs, job.runs, line, stale);
}

// This rank's preparation, and a plan whose ranks are not the job's processes.
Status MpiSetup(const Result<Prepared>& prepared, const exec::Transport& transport) {
  if (!prepared.ok()) return prepared.status();
  const int64_t ranks = prepared->run.schedule.num_ranks;
  if (ranks == transport.size()) return Status::Ok();
  return Status::Invalid(
      "--transport mpi: the plan has " + std::to_string(ranks) + " ranks but this MPI job has " +
      std::to_string(transport.size()) + (transport.size() == 1 ? " process" : " processes") +
      "; run it as mpirun -np " + std::to_string(ranks) + " meshplan execute ...");
}

// One process per rank. Every rank prepares (plan, schedule, inputs) itself; the job agrees that
// all are ready (else the first failing rank, rank 0 first, prints its error and every rank exits
// with its code); each runs its rank; rank 0 gathers, checks and prints.
int RunMpi(const ExecuteFlags& flags, exec::MpiJob& mpi) {
  exec::Transport& transport = mpi.transport();
  const int rank = transport.rank();
  auto prepared = PrepareExecution(flags);
  const Status setup = MpiSetup(prepared, transport);
  exec::ExecuteConfig config = prepared.ok() ? prepared->config : exec::ExecuteConfig{};
  // Rank 0 alone owns the outputs directory; it clears an earlier run's files once every rank is
  // ready, since a rank that fails later aborts the job before rank 0 could.
  StaleOutputs stale(flags);
  if (rank == 0) config.on_start = [&stale] { stale.Remove(); };
  auto job = exec::RunJobRank(transport, setup.ok() ? &prepared->run : nullptr, setup,
                              setup.ok() ? 0 : ExitCodeOf(setup), config, Timeout(flags),
                              RepeatCount(flags).value(), RunProgress(flags));
  if (!job.ok()) {
    std::fprintf(stderr, "meshplan: error: run failed: %s%s\n", job.status().message().c_str(),
                 rank == 0 ? stale.Suffix().c_str() : "");
    return kExitFailure;
  }
  if (job->failed_rank >= 0) {
    // A rank that could not prepare: nothing ran, and the outputs directory is left alone.
    if (rank == job->failed_rank) {
      std::fprintf(stderr, "meshplan: error: %s%s\n",
                   rank == 0 ? "" : ("rank " + std::to_string(rank) + ": ").c_str(),
                   job->failure.message().c_str());
    }
    return job->failure_code;
  }
  if (rank != 0) return FinishOtherRank(flags, mpi);
  return FinishRankZero(flags, *prepared, *job, stale);
}

int RunExecute(ExecuteFlags flags) {
  if (flags.transport.empty()) flags.transport = flags.backend == "cuda" ? "local" : "threads";
  // Before any thread starts: glibc fixes its arena count at the first thread's allocation.
  if (flags.backend != "cuda") exec::KeepFreedHostMemoryMapped();
  if (flags.transport != "mpi") return RunInProcess(flags);
  // Flags first, so a bad flag needs no MPI; then the MPI plug-in is opened and MPI initialised,
  // only for --transport mpi (executor/transport/mpi_plugin.h).
  if (Status st = CheckFlags(flags); !st.ok()) {
    // Every rank refuses the same flags: one line from the launcher's rank 0, not one per rank.
    return LaunchedAsRankZero() ? ReportError(st) : ExitCodeOf(st);
  }
  auto job = exec::OpenMpiJob();
  if (!job.ok()) return ReportError(job.status().WithContext("--transport mpi"));
  const int code = RunMpi(flags, **job);
  job->reset();  // drains the sends, then finalizes MPI
  return code;
}

// The plan, and what runs it: backend, transport, input type, kernels, devices.
void RegisterRunFlags(CLI::App* cmd, ExecuteFlags& f) {
  cmd->add_option("plan", f.plan, "Plan file (TOML, from meshplan plan --out)")->required();
  cmd->add_option("--backend", f.backend,
                  std::string("Compute backend: cpu, or cuda (GPU kernels") +
                      (CudaBackendBuilt() ? ")" : "; not built in this binary)"))
      ->capture_default_str();
  cmd->add_option(
      "--transport", f.transport,
      "cpu: threads (default) or mpi; cuda: local (default: every rank in this process, "
      "device-to-device copies, any number of ranks per GPU), nccl (this process, one GPU per "
      "rank) or mpi (one process per rank, NCCL: mpirun -np P meshplan execute ...)");
  cmd->add_option(
      "--dtype", f.dtype,
      "cuda: input type bf16 or fp16 (default: the plan's dtype when 16-bit, else bf16); "
      "accumulation is fp32");
  cmd->add_option(
         "--kernels", f.kernels,
         "cuda: auto (cuDNN's fused attention where it can compute a block, own tensor-core "
         "kernels "
         "elsewhere), cudnn (cuDNN for every block), tensor (own tensor-core kernels) or simt (own "
         "portable kernels)")
      ->capture_default_str();
  cmd->add_option(
         "--devices", f.devices,
         "cuda, transport local: GPUs the ranks spread over round-robin (0: every visible GPU)")
      ->capture_default_str();
}

// The check, the inputs and outputs, the prediction's cluster, the receive timeout.
void RegisterDataFlags(CLI::App* cmd, ExecuteFlags& f) {
  cmd->add_flag(
      "--check", f.check,
      "Compare O, LSE, dQ, dK, dV with plain attention in float64; fails (exit 1) when a "
      "max relative error (max |x - ref| / max |ref|) exceeds 1e-4 (cpu), 2e-2 (cuda bf16) "
      "or 5e-3 (cuda fp16)");
  cmd->add_option("--seed", f.seed, "Seed of the random inputs (when no --inputs)")
      ->capture_default_str();
  cmd->add_option(
      "--inputs", f.inputs,
      "Directory with q.npy, k.npy, v.npy ([B,S,Hq,d], [B,S,Hkv,d]) and d_o.npy for a backward");
  cmd->add_option("--outputs", f.outputs,
                  "Directory (created if missing) for o.npy, lse.npy ([B,S,Hq]), dq.npy, dk.npy, "
                  "dv.npy; written "
                  "only after a successful run (and check)");
  cmd->add_option("--topology,-t", f.topology,
                  "Cluster TOML file or shipped cluster name for the prediction (default: the "
                  "plan's own topology)");
  cmd->add_option("--timeout-s", f.timeout_s,
                  "A receive waiting longer than this fails the run (seconds)")
      ->capture_default_str();
}

// The report, its errors, repeated runs, notes and the memory limit.
void RegisterReportFlags(CLI::App* cmd, ExecuteFlags& f) {
  cmd->add_option("--format", f.format,
                  "Output: table, json or csv (one row per run, with a header)")
      ->capture_default_str();
  cmd->add_option("-o,--out", f.out, "Write the report here (atomically); default: stdout");
  cmd->add_flag("--append", f.append,
                "With --format csv: add the row to -o's file when it has the same header (on "
                "stdout: the row without the header, for >> FILE)");
  cmd->add_flag("--errors", f.errors,
                "Percentage errors against the prediction even when the plan's cluster is not "
                "this machine (CPU ranks against a GPU cluster; a calibrated file always has "
                "them)");
  cmd->add_option(
         "--repeat", f.repeat,
         "Benchmark: N timed runs of the same inputs (1 to 1000; one untimed warm-up run first "
         "when "
         "N > 1); reports the median, min, max and spread of the measured time, the median run's "
         "timeline, and its error against the prediction; --check and --outputs use the first "
         "timed "
         "run; progress on stderr per run")
      ->capture_default_str();
  cmd->add_flag("--quiet,-q", f.quiet,
                "No progress messages or notes on stderr (errors still go there)");
}

// Testing: injected failures and the dependency check.
void RegisterTestingFlags(CLI::App* cmd, ExecuteFlags& f) {
  cmd->add_option("--inject-fail", f.inject_fail,
                  "Testing: rank RANK fails at its op OP (RANK:OP), as if that op had failed");
  cmd->add_option(
      "--max-memory", f.max_memory,
      "Host memory the run may use (e.g. 16G; K, M, G are binary); the run is refused before "
      "anything is allocated when its estimated need exceeds it (default: the memory available "
      "now, from /proc/meminfo and the cgroup limit)");
  cmd->add_flag(
      "--check-dependencies", f.check_dependencies,
      "Testing: fail the run, naming the op and the buffer, when an op reads a buffer that no "
      "chain of the schedule's deps and stream order puts after the op that wrote it");
  cmd->add_option(
      "--inject-silent", f.inject_silent,
      "Testing: this rank drops every message it sends, like a peer that never answers");
}

}  // namespace

Runner RegisterExecuteCommand(CLI::App& app) {
  auto flags = std::make_shared<ExecuteFlags>();
  CLI::App* cmd =
      app.add_subcommand("execute",
                         "Run a plan file for real (CPU: one rank per thread or MPI "
                         "process; CUDA: GPU kernels with device copies or NCCL), check it "
                         "against plain attention, and compare the measured timeline with "
                         "the simulator's");
  RegisterRunFlags(cmd, *flags);
  RegisterDataFlags(cmd, *flags);
  RegisterReportFlags(cmd, *flags);
  RegisterTestingFlags(cmd, *flags);
  return [flags] { return RunExecute(*flags); };
}

}  // namespace meshplan::tools
