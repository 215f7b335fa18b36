// Runs a schedule for real and assembles the global outputs, so they can be compared with plain
// attention (executor/kernels/reference.h). Every backend and transport runs the one execution
// engine (executor/device/device_engine.h) over a DeviceOps: the host streams (CPU) or CUDA.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/plan/schedule.h"
#include "core/workload/workload.h"
#include "executor/backend_session.h"
#include "executor/device/engine_outputs.h"
#include "executor/device/run_options.h"
#include "executor/device/shard_store.h"
#include "executor/io/input_source.h"
#include "executor/io/tensor.h"
#include "executor/timing/op_timing.h"
#include "executor/transport/transport.h"

namespace meshplan::exec {

enum class Backend : uint8_t { kCpu, kCuda };

// How the ranks of one process exchange data.
enum class TransportKind : uint8_t {
  // cpu: one engine per rank, each on its own thread, messages through in-process mailboxes
  // (ThreadFabric) exactly as between processes.
  kThreads,
  // One engine for every rank: host copies (cpu) or device-to-device copies (cuda, any number of
  // ranks per GPU).
  kLocal,
  // cuda: one engine, NCCL between the GPUs of this process (one rank per GPU).
  kNccl,
};

struct ExecuteConfig {
  Backend backend = Backend::kCpu;
  TransportKind transport = TransportKind::kThreads;
  RunOptions run;
  int devices = 1;  // cuda, kLocal: GPUs the ranks spread over round-robin (0: every visible GPU)
  bool poison = false;  // cuda: fill fresh allocations with NaN bytes (validation runs)
  // false: every output element is still produced and its coverage checked, but nothing is copied
  // out (ExecutionResult::outputs stays empty), so a benchmark holds no global output tensors.
  bool keep_outputs = true;
  // false: the schedule need not produce every output element (calibration runs time a few blocks
  // of a sequence they do not cover, executor/calibration/engine_calibration.h); the run then
  // computes no attention result, only its timings. true: a missing element fails the run.
  bool check_coverage = true;
  // State kept between runs (executor/backend_session.h); null: this run sets up its own and
  // drops it at the end. ExecuteRepeated and RunJobRank make one for their runs when it is null.
  std::shared_ptr<BackendSession> session;
  // Called once the run is about to start, after every check Execute makes (backend, device,
  // transport), right before the first rank runs; a caller removes what an earlier run left
  // there (`execute --outputs`). Called by Execute, once per ExecuteRepeated, and by RunJobRank
  // after the start barrier agreed; ExecuteRank alone does not call it. May be empty.
  std::function<void()> on_start;
};

struct ExecutionResult {
  // o, lse (forward) and dq, dk, dv (backward) in the global layout (empty without
  // ExecuteConfig::keep_outputs); inputs are not copied.
  AttentionTensors<float> outputs;
  std::vector<std::vector<OpTiming>> timings;  // [rank][op]
  double wall_s = 0;
  std::string device;               // what ran it ("host (...)", "CUDA (NVIDIA H100 ...)")
  std::vector<int64_t> peak_bytes;  // per rank: most engine memory held at once
};

// Executes `schedule` (expanded for `workload`, whose pass must include the forward when it
// includes the backward) with every rank in this process. Each rank reads only its own rows of
// q, k, v and, for a backward, d_o from `inputs`. Every output element must be produced by some
// rank (unless ExecuteConfig::check_coverage is false); a missing one is an error. Failures name
// the rank and op.
Result<ExecutionResult> Execute(const Schedule& schedule, const Workload& workload,
                                const InputSource& inputs, const ExecuteConfig& config);
// The same with whole input tensors (q, k, v, and d_o for a backward).
Result<ExecutionResult> Execute(const Schedule& schedule, const Workload& workload,
                                const AttentionTensors<float>& inputs, const ExecuteConfig& config);

// This process's rank (transport.rank()) of a job with one process per rank (MPI): the host
// backend exchanges over `transport`; cuda sets NCCL up over it. Writes what this rank produced
// into `outputs` (sized by OutputTensors) and marks it in `covered` (CoverageSize elements; both
// executor/device/engine_outputs.h), for GatherOutputs (executor/gather.h).
Status ExecuteRank(const Schedule& schedule, const Workload& workload, const InputSource& inputs,
                   const ExecuteConfig& config, Transport& transport,
                   AttentionTensors<float>* outputs, std::vector<uint8_t>* covered,
                   std::vector<OpTiming>* timings, std::string* device = nullptr);
Status ExecuteRank(const Schedule& schedule, const Workload& workload,
                   const AttentionTensors<float>& inputs, const ExecuteConfig& config,
                   Transport& transport, AttentionTensors<float>* outputs,
                   std::vector<uint8_t>* covered, std::vector<OpTiming>* timings,
                   std::string* device = nullptr);

}  // namespace meshplan::exec
