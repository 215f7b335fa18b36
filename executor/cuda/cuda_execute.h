// Runs a schedule on CUDA GPUs: the device engine (executor/device/device_engine.h) with
// CudaDeviceOps. Two shapes of run:
//  - one process for every rank: device-to-device copies (any number of virtual ranks per GPU,
//    spread round-robin over `devices` GPUs), or NCCL with one GPU per rank (ncclCommInitAll);
//  - one rank per process under mpirun: NCCL, with the ncclUniqueId sent from rank 0 to the
//    others over the MPI transport.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/schedule.h"
#include "core/status.h"
#include "core/workload.h"
#include "executor/cuda/cuda_device_ops.h"
#include "executor/rank_runner.h"
#include "executor/tensor.h"
#include "executor/transport.h"

namespace meshplan::exec::cuda {

struct CudaRunConfig {
  InputType type = InputType::kBf16;
  KernelPath path = KernelPath::kAuto;
  TransferKind transfers = TransferKind::kLocalCopies;
  int devices = 1;         // GPUs the ranks of one process spread over (0: every visible GPU)
  double timeout_s = 120;  // the whole run must finish on the device within this
  int fail_rank = -1;      // fault injection, as DeviceRunOptions
  int64_t fail_op = -1;
  bool poison = false;     // CudaOpsConfig::poison_allocations
};

struct CudaExecution {
  AttentionTensors<float> outputs;             // o, lse, dq, dk, dv of the pass, global layout
  std::vector<std::vector<OpTiming>> timings;  // [rank][op], CUDA-event times since the rank's start
  double wall_s = 0;                           // host time from first issue to completion
  std::string device;                          // CudaDeviceOps::Describe()
  std::vector<int64_t> peak_bytes;             // per rank: most engine memory held at once
};

// Every rank in this process. Every output element must be produced (else kInternal).
Result<CudaExecution> ExecuteOnCuda(const Schedule& schedule, const Workload& workload,
                                    const AttentionTensors<float>& inputs, const CudaRunConfig& config);

// This process's rank (transport.rank()) of a job with one rank per process, NCCL transfers.
// Outputs and coverage as ExecuteRank (executor/execute.h), for GatherOutputs.
Status ExecuteRankOnCuda(const Schedule& schedule, const Workload& workload, const AttentionTensors<float>& inputs,
                         const CudaRunConfig& config, Transport& transport, AttentionTensors<float>* outputs,
                         std::vector<uint8_t>* covered, std::vector<OpTiming>* timings, std::string* device);

}  // namespace meshplan::exec::cuda
