#include "executor/execute.h"

#include <algorithm>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>

#include "executor/device/device_engine.h"
#include "executor/device/host_device_ops.h"
#include "executor/gather.h"
#include "executor/host_allocator.h"
#include "executor/transport/thread_transport.h"
#if MESHPLAN_HAVE_CUDA
#include "executor/cuda/cuda_execute.h"
#endif

namespace meshplan::exec {
namespace {

Status CheckPass(const Workload& w) {
  if (HasBackward(w.pass) && !HasForward(w.pass)) {
    return Status::Invalid("execute a backward together with its forward (pass fwd+bwd)");
  }
  return Status::Ok();
}

[[maybe_unused]] Status CudaNotBuilt() {
  return Status::Invalid("the CUDA backend is not built in this binary");
}

// The root cause among ranks' failures: the first that is not another rank's abort.
Status RootCause(const std::vector<Status>& status) {
  const Status* first = nullptr;
  for (const Status& st : status) {
    if (st.ok()) continue;
    if (first == nullptr || (first->message().find("aborted") != std::string::npos &&
                             st.message().find("aborted") == std::string::npos)) {
      first = &st;
    }
  }
  return first == nullptr ? Status::Ok() : *first;
}

// Every rank in this process on the host backend, one engine per rank on its own thread, joined
// by in-process transports as processes would be.
Status RunHostThreads(const Schedule& schedule, const Workload& workload, const InputSource& inputs,
                      const RunOptions& options, AttentionTensors<float>* outputs,
                      ExecutionResult* result, std::vector<uint8_t>* covered) {
  const int ranks = static_cast<int>(schedule.num_ranks);
  auto transports = MakeThreadTransports(ranks);
  std::vector<Status> status(static_cast<size_t>(ranks));
  result->timings.assign(static_cast<size_t>(ranks), {});
  result->peak_bytes.assign(static_cast<size_t>(ranks), 0);
  std::mutex collect;
  std::vector<std::thread> threads;
  // An exception on a rank's thread (an allocation that fails) ends that rank like an error and
  // is rethrown to the caller after every thread joined, as if the ranks ran on its thread.
  std::vector<std::exception_ptr> thrown(static_cast<size_t>(ranks));
  // A rank whose thread cannot start (std::system_error under ulimit -v or -u) would leave the
  // ranks already running waiting for it and, unwinding, destroy their threads unjoined
  // (std::terminate, issue 49): they are aborted and joined, and the run ends out of memory.
  auto start_failed = [&](int r, const std::system_error& e) {
    const Status why = Status::OutOfMemory("could not start rank " + std::to_string(r) +
                                           "'s thread (" + e.what() + ")");
    for (auto& transport : transports) transport->Abort(why);
    for (auto& t : threads) t.join();
    return why;
  };
  for (int r = 0; r < ranks; ++r) {
    try {
      threads.emplace_back([&, r] {
        try {
          HostDeviceOps ops(workload,
                            {transports[r].get(), options.recv_timeout, options.silent_rank});
          std::vector<uint8_t> local(static_cast<size_t>(ranks), 0);
          local[r] = 1;
          auto run = RunEngine(schedule, workload, inputs, options, ops, std::move(local), outputs,
                               covered, &collect);
          if (!run.ok()) {
            status[r] = run.status();
            transports[r]->Abort(run.status());
            return;
          }
          result->timings[r] = run->times[r];
          result->peak_bytes[r] = run->peak_bytes[r];
        } catch (...) {
          thrown[r] = std::current_exception();
          status[r] =
              Status::Internal("rank " + std::to_string(r) + ": an exception ended the rank");
          transports[r]->Abort(status[r]);
        }
      });
    } catch (const std::system_error& e) {
      return start_failed(r, e);
    }
  }
  for (auto& t : threads) t.join();
  for (const std::exception_ptr& e : thrown) {
    if (e) std::rethrow_exception(e);
  }
  result->device = "host, one engine per rank on its own thread (a worker thread per stream)";
  return RootCause(status);
}

}  // namespace

Result<ExecutionResult> Execute(const Schedule& schedule, const Workload& workload,
                                const InputSource& inputs, const ExecuteConfig& config) {
  MESHPLAN_RETURN_IF_ERROR(CheckPass(workload));
  if (config.backend == Backend::kCuda) {
#if MESHPLAN_HAVE_CUDA
    return cuda::ExecuteOnCuda(schedule, workload, inputs, config);
#else
    return CudaNotBuilt();
#endif
  }
  if (config.transport == TransportKind::kNccl)
    return Status::Invalid("transport nccl needs the cuda backend");
  KeepFreedHostMemoryMapped();  // before the rank threads start (host_allocator.h)
  ExecutionResult result;
  if (config.keep_outputs) result.outputs = OutputTensors(workload);
  AttentionTensors<float>* outputs = config.keep_outputs ? &result.outputs : nullptr;
  std::vector<uint8_t> covered(CoverageSize(workload), 0);
  if (config.on_start) config.on_start();
  const Clock::time_point start = Clock::now();
  if (config.transport == TransportKind::kThreads) {
    MESHPLAN_RETURN_IF_ERROR(
        RunHostThreads(schedule, workload, inputs, config.run, outputs, &result, &covered));
  } else {
    HostDeviceOps ops(workload, {nullptr, config.run.recv_timeout, config.run.silent_rank});
    auto run = RunEngine(schedule, workload, inputs, config.run, ops,
                         std::vector<uint8_t>(static_cast<size_t>(schedule.num_ranks), 1), outputs,
                         &covered);
    if (!run.ok()) return run.status();
    result.timings = std::move(run->times);
    result.peak_bytes = std::move(run->peak_bytes);
    result.device = "host, one engine for every rank (a worker thread per rank and stream)";
  }
  result.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  if (config.check_coverage) MESHPLAN_RETURN_IF_ERROR(CheckCoverage(workload, covered));
  return result;
}

Result<ExecutionResult> Execute(const Schedule& schedule, const Workload& workload,
                                const AttentionTensors<float>& inputs,
                                const ExecuteConfig& config) {
  return Execute(schedule, workload, TensorInputSource(inputs), config);
}

Status ExecuteRank(const Schedule& schedule, const Workload& workload, const InputSource& inputs,
                   const ExecuteConfig& config, Transport& transport,
                   AttentionTensors<float>* outputs, std::vector<uint8_t>* covered,
                   std::vector<OpTiming>* timings, std::string* device) {
  MESHPLAN_RETURN_IF_ERROR(CheckPass(workload));
  if (config.backend == Backend::kCuda) {
#if MESHPLAN_HAVE_CUDA
    return cuda::ExecuteRankOnCuda(schedule, workload, inputs, config, transport, outputs, covered,
                                   timings, device);
#else
    return CudaNotBuilt();
#endif
  }
  const int rank = transport.rank();
  // Idempotent. Here for library callers: the mmap and trim settings take effect at once, the arena
  // count only before a process's first threads allocate, which `meshplan execute` ensures by
  // calling it first (tools/execute_command.cc).
  KeepFreedHostMemoryMapped();
  HostDeviceOps ops(workload, {&transport, config.run.recv_timeout, config.run.silent_rank});
  std::vector<uint8_t> local(static_cast<size_t>(schedule.num_ranks), 0);
  local[rank] = 1;
  MESHPLAN_ASSIGN_OR_RETURN(auto run, RunEngine(schedule, workload, inputs, config.run, ops,
                                                std::move(local), outputs, covered));
  if (timings != nullptr) *timings = run.times[rank];
  if (device != nullptr) *device = ops.Describe();
  return Status::Ok();
}

Status ExecuteRank(const Schedule& schedule, const Workload& workload,
                   const AttentionTensors<float>& inputs, const ExecuteConfig& config,
                   Transport& transport, AttentionTensors<float>* outputs,
                   std::vector<uint8_t>* covered, std::vector<OpTiming>* timings,
                   std::string* device) {
  return ExecuteRank(schedule, workload, TensorInputSource(inputs), config, transport, outputs,
                     covered, timings, device);
}

}  // namespace meshplan::exec
