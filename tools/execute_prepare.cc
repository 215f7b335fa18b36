// `meshplan execute`: from flags to a run ready to go (tools/execute_run.h).
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <optional>
#include <string>

#include "core/base/atomic_file.h"
#include "core/base/escape.h"
#include "core/base/units.h"
#include "core/cost/attention_flops.h"
#include "executor/calibration/cpu_calibration.h"
#include "executor/calibration/run_estimate.h"
#include "executor/host_memory.h"
#include "executor/plan_run.h"
#include "executor/timing/repeat.h"
#include "planner/plan_file.h"
#include "tools/cli_common.h"
#include "tools/execute_run.h"

namespace meshplan::tools {

namespace {

// --backend and the flags that depend on it: the transport, the CUDA-only flags, the testing
// flags each backend supports.
Status CheckBackendFlags(const ExecuteFlags& flags) {
  if (flags.backend == "cpu") {
    if (flags.transport != "threads" && flags.transport != "mpi") {
      return Status::Invalid("--transport: '" + flags.transport +
                             "' is not one of threads, mpi (backend cpu)");
    }
    if (!flags.dtype.empty() || flags.kernels != "auto" || flags.devices != 1)
      return Status::Invalid("--dtype, --kernels and --devices apply to --backend cuda only");
    return Status::Ok();
  }
  if (flags.backend != "cuda")
    return Status::Invalid("--backend: '" + flags.backend + "' is not one of cpu, cuda");
  if (!CudaBackendBuilt()) {
    return Status::Invalid(
        "--backend: backend 'cuda' is not built in this binary (it was built without the "
        "CUDA toolkit in /usr/local/cuda; available: cpu)");
  }
  if (flags.transport != "local" && flags.transport != "nccl" && flags.transport != "mpi") {
    return Status::Invalid("--transport: '" + flags.transport +
                           "' is not one of local, nccl, mpi (backend cuda)");
  }
  if (!flags.inject_fail.empty() && flags.transport == "mpi")
    return Status::Invalid("--inject-fail: not supported with --backend cuda --transport mpi");
  if (!flags.inject_silent.empty())
    return Status::Invalid("--inject-silent: not supported with --backend cuda");
  return Status::Ok();
}

}  // namespace

Status CheckFlags(const ExecuteFlags& flags) {
  MESHPLAN_RETURN_IF_ERROR(CheckBackendFlags(flags));
  // A millisecond at least: the deadline is kept in whole milliseconds (5e-324 was accepted).
  if (!(flags.timeout_s >= 1e-3) || !std::isfinite(flags.timeout_s) || flags.timeout_s > 1e6) {
    return Status::Invalid("--timeout-s: must be a number of seconds in [0.001, 1e6]");
  }
  if (auto repeat = RepeatCount(flags); !repeat.ok()) return repeat.status();
  if (!flags.outputs.empty()) {
    MESHPLAN_RETURN_IF_ERROR(CheckOutputDirectory(flags.outputs).WithContext("--outputs"));
  }
  if (flags.append && flags.format != "csv")
    return Status::Invalid("--append: only with --format csv (got --format " + flags.format + ")");
  if (!flags.out.empty()) {
    MESHPLAN_RETURN_IF_ERROR(CheckWritableOutput(flags.out).WithContext("-o"));
  }
  return CheckFormat(flags.format, {"table", "json", "csv"});
}

Result<int> RepeatCount(const ExecuteFlags& flags) {
  const std::string& text = flags.repeat;
  int64_t n = -1;
  bool number = !text.empty() && text.find_first_not_of("+-0123456789") == std::string::npos;
  if (number) {
    try {
      size_t used = 0;
      n = std::stoll(text, &used);
      number = used == text.size();
    } catch (const std::exception&) {
      number = false;
    }
  }
  if (!number) {
    return Status::Invalid("--repeat: '" + text + "' is not a number of runs from 1 to " +
                           std::to_string(exec::kMaxRepeat));
  }
  MESHPLAN_RETURN_IF_ERROR(exec::CheckRepeat(n).WithContext("--repeat"));
  return static_cast<int>(n);
}

exec::RunObserver RunProgress(const ExecuteFlags& flags) {
  auto repeat = RepeatCount(flags);
  if (flags.quiet || !repeat.ok() || *repeat <= 1) return {};
  return [](int run, int runs, double time_s) {
    if (run == 0) {
      std::fprintf(stderr, "warm-up run: %s (not timed)\n", FormatSeconds(time_s).c_str());
    } else {
      std::fprintf(stderr, "run %d/%d: %s\n", run, runs, FormatSeconds(time_s).c_str());
    }
    std::fflush(stderr);
  };
}

std::chrono::milliseconds Timeout(const ExecuteFlags& flags) {
  return std::chrono::milliseconds(static_cast<int64_t>(std::ceil(flags.timeout_s * 1000)));
}

namespace {

// A rank or op index: decimal digits only (no sign, no spaces), at most 18 of them.
std::optional<int64_t> ParseIndex(const std::string& text) {
  if (text.empty() || text.size() > 18 ||
      text.find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  return std::stoll(text);
}

}  // namespace

// --timeout-s and the fault injection flags; the rank and op they name must exist in `schedule`.
Status SetRunOptions(const ExecuteFlags& flags, const Schedule& schedule,
                     exec::RunOptions* options) {
  options->recv_timeout = Timeout(flags);
  options->check_dependencies = flags.check_dependencies;
  const int64_t ranks = schedule.num_ranks;
  if (!flags.inject_fail.empty()) {
    const size_t colon = flags.inject_fail.find(':');
    const std::optional<int64_t> rank =
        colon == std::string::npos ? std::nullopt : ParseIndex(flags.inject_fail.substr(0, colon));
    const std::optional<int64_t> op =
        colon == std::string::npos ? std::nullopt : ParseIndex(flags.inject_fail.substr(colon + 1));
    if (!rank || !op || *rank >= ranks) {
      return Status::Invalid("--inject-fail: " + QuoteInput(flags.inject_fail) +
                             " is not RANK:OP with 0 <= RANK < " + std::to_string(ranks) +
                             " and OP >= 0");
    }
    const int64_t ops = static_cast<int64_t>(schedule.ranks[static_cast<size_t>(*rank)].ops.size());
    if (*op >= ops) {
      return Status::Invalid("--inject-fail: " + QuoteInput(flags.inject_fail) + ": rank " +
                             std::to_string(*rank) + " has " + std::to_string(ops) + " ops");
    }
    options->fail_rank = static_cast<int>(*rank);
    options->fail_op = *op;
  }
  if (!flags.inject_silent.empty()) {
    const std::optional<int64_t> rank = ParseIndex(flags.inject_silent);
    if (!rank || *rank >= ranks) {
      return Status::Invalid("--inject-silent: " + QuoteInput(flags.inject_silent) +
                             " is not a rank in [0, " + std::to_string(ranks) + ")");
    }
    options->silent_rank = static_cast<int>(*rank);
  }
  return Status::Ok();
}

bool KeepsOutputs(const ExecuteFlags& flags) { return flags.check || !flags.outputs.empty(); }

Result<exec::HostBudget> HostBudgetOf(const ExecuteFlags& flags, int64_t ranks) {
  exec::HostBudget budget;
  if (!flags.max_memory.empty()) {
    auto bytes = ParseCount(flags.max_memory);
    if (!bytes.ok()) return bytes.status().WithContext("--max-memory");
    budget.limit_bytes = static_cast<double>(*bytes);
    budget.limit_source = "--max-memory " + flags.max_memory;
  } else {
    budget.limit_bytes = exec::AvailableHostMemoryBytes();
    budget.limit_source = "available now, from /proc/meminfo and the cgroup limit";
  }
  // Threads hold every rank in this process; under MPI a process holds one; CUDA ranks work in
  // device memory.
  budget.ranks_in_process = flags.backend == "cuda" ? 0 : flags.transport == "mpi" ? 1 : ranks;
  budget.check = flags.check;
  budget.keep_outputs = KeepsOutputs(flags);
  return budget;
}

Result<Prepared> PrepareExecution(const ExecuteFlags& flags) {
  MESHPLAN_RETURN_IF_ERROR(CheckFlags(flags));
  Prepared p;
  MESHPLAN_ASSIGN_OR_RETURN(auto plan, planner::LoadPlanFile(flags.plan));
  auto topology = PlanTopology(flags.plan, flags.topology, plan, {}, flags.quiet);
  if (!topology.ok()) return topology.status();
  p.topology = std::move(topology).value();
  if (flags.backend == "cuda") MESHPLAN_RETURN_IF_ERROR(PrepareCuda(flags, plan, &p));
  MESHPLAN_ASSIGN_OR_RETURN(auto budget, HostBudgetOf(flags, plan.num_gpus));
  auto run = exec::PreparePlanRun(plan, flags.plan, p.topology, {flags.inputs, flags.seed},
                                  p.config.run.type, budget);
  if (!run.ok()) return run.status();
  p.run = std::move(run).value();
  MESHPLAN_RETURN_IF_ERROR(SetRunOptions(flags, p.run.schedule, &p.config.run));
  p.config.keep_outputs = KeepsOutputs(flags);
  return p;
}

void NoteLongRun(const ExecuteFlags& flags, const Prepared& p) {
  if (flags.quiet || flags.backend != "cpu" || flags.transport != "threads") return;
  const int repeat = RepeatCount(flags).value();
  const int runs = exec::WarmUpRuns(repeat) + repeat;
  auto estimate = exec::EstimateCpuRuns(p.run.plan.workload, p.run.schedule.num_ranks, runs);
  if (!estimate.ok() || estimate->seconds < exec::kLongRunSeconds) return;
  std::fprintf(stderr,
               "meshplan: note: %d run%s of %.3g FLOPs will take at least %s here (%.1f GFLOP/s "
               "per core measured "
               "just now, on %d core%s)\n",
               runs, runs == 1 ? "" : "s", WorkloadFlops(p.run.plan.workload),
               FormatSeconds(estimate->seconds).c_str(), estimate->flops_per_s / 1e9,
               estimate->cores, estimate->cores == 1 ? "" : "s");
  std::fflush(stderr);
}

void NoteCalibrationConditions(const ExecuteFlags& flags, const Prepared& p) {
  if (flags.quiet || flags.backend != "cpu") return;
  const std::string caveat =
      p.topology.calibration.LoadCaveat(exec::CpuCalibrationTarget::LoadAverage());
  if (caveat.empty()) return;
  std::fprintf(stderr, "meshplan: note: %s was %s\n", p.topology.source.c_str(), caveat.c_str());
  std::fflush(stderr);
}

void NoteWidenedPass(const ExecuteFlags& flags, const Prepared& p) {
  if (p.run.widened && !flags.quiet) {
    std::fprintf(stderr,
                 "meshplan: note: the plan's pass is bwd; running fwd+bwd (the backward needs the "
                 "forward's O and "
                 "LSE)\n");
  }
}

}  // namespace meshplan::tools
