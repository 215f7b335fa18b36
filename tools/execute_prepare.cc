// `meshplan execute`: from flags to a run ready to go (tools/execute_run.h).
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>

#include "core/plan_io.h"
#include "core/units.h"
#include "executor/host_memory.h"
#include "executor/plan_run.h"
#include "executor/repeat.h"
#include "tools/cli_common.h"
#include "tools/execute_run.h"

namespace meshplan::tools {

Status CheckFlags(const ExecuteFlags& flags) {
  if (flags.backend == "cuda") {
    if (!CudaBackendBuilt()) {
      return Status::Invalid("--backend: backend 'cuda' is not built in this binary (it was built without the "
                             "CUDA toolkit in /usr/local/cuda; available: cpu)");
    }
    if (flags.transport != "local" && flags.transport != "nccl" && flags.transport != "mpi") {
      return Status::Invalid("--transport: '" + flags.transport + "' is not one of local, nccl, mpi (backend cuda)");
    }
    if (!flags.inject_fail.empty() && flags.transport == "mpi") {
      return Status::Invalid("--inject-fail: not supported with --backend cuda --transport mpi");
    }
    if (flags.inject_silent != -1) return Status::Invalid("--inject-silent: not supported with --backend cuda");
  } else if (flags.backend == "cpu") {
    if (flags.transport != "threads" && flags.transport != "mpi") {
      return Status::Invalid("--transport: '" + flags.transport + "' is not one of threads, mpi (backend cpu)");
    }
    if (!flags.dtype.empty() || flags.kernels != "auto" || flags.devices != 1) {
      return Status::Invalid("--dtype, --kernels and --devices apply to --backend cuda only");
    }
  } else {
    return Status::Invalid("--backend: '" + flags.backend + "' is not one of cpu, cuda");
  }
  if (!(flags.timeout_s > 0) || !std::isfinite(flags.timeout_s) || flags.timeout_s > 1e6) {
    return Status::Invalid("--timeout-s: must be a number of seconds in (0, 1e6]");
  }
  if (auto repeat = RepeatCount(flags); !repeat.ok()) return repeat.status();
  return CheckFormat(flags.format, {"table", "json"});
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

// --timeout-s and the fault injection flags; ranks checked against `ranks`.
Status SetRunOptions(const ExecuteFlags& flags, int64_t ranks, exec::RunOptions* options) {
  options->recv_timeout = Timeout(flags);
  options->check_dependencies = flags.check_dependencies;
  if (!flags.inject_fail.empty()) {
    const size_t colon = flags.inject_fail.find(':');
    int64_t rank = -1, op = -1;
    if (colon != std::string::npos) {
      try {
        size_t used_rank = 0, used_op = 0;
        const std::string rank_text = flags.inject_fail.substr(0, colon),
                          op_text = flags.inject_fail.substr(colon + 1);
        rank = std::stoll(rank_text, &used_rank);
        op = std::stoll(op_text, &used_op);
        if (used_rank != rank_text.size() || used_op != op_text.size()) rank = -1;
      } catch (const std::exception&) {
        rank = -1;
      }
    }
    if (rank < 0 || rank >= ranks || op < 0) {
      return Status::Invalid("--inject-fail: '" + flags.inject_fail +
                             "' is not RANK:OP with 0 <= RANK < " + std::to_string(ranks) +
                             " and OP >= 0");
    }
    options->fail_rank = static_cast<int>(rank);
    options->fail_op = op;
  }
  if (flags.inject_silent != -1) {
    if (flags.inject_silent < 0 || flags.inject_silent >= ranks) {
      return Status::Invalid("--inject-silent: rank " + std::to_string(flags.inject_silent) +
                             " is not in [0, " + std::to_string(ranks) + ")");
    }
    options->silent_rank = flags.inject_silent;
  }
  return Status::Ok();
}

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
  return budget;
}

Result<Prepared> PrepareExecution(const ExecuteFlags& flags) {
  MESHPLAN_RETURN_IF_ERROR(CheckFlags(flags));
  Prepared p;
  auto plan = LoadPlanFile(flags.plan);
  if (!plan.ok()) return plan.status();
  auto topology = PlanTopology(flags.plan, flags.topology, *plan);
  if (!topology.ok()) return topology.status();
  p.topology = std::move(topology).value();
  if (flags.backend == "cuda") MESHPLAN_RETURN_IF_ERROR(PrepareCuda(flags, *plan, &p));
  auto budget = HostBudgetOf(flags, plan->num_gpus);
  if (!budget.ok()) return budget.status();
  auto run = exec::PreparePlanRun(*plan, flags.plan, p.topology, {flags.inputs, flags.seed}, p.config.run.type,
                                  *budget);
  if (!run.ok()) return run.status();
  p.run = std::move(run).value();
  MESHPLAN_RETURN_IF_ERROR(SetRunOptions(flags, p.run.schedule.num_ranks, &p.config.run));
  return p;
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
