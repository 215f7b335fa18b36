// The CUDA backend of Execute/ExecuteRank (executor/execute.h): the execution engine
// (executor/device/device_engine.h) with CudaDeviceOps. Two shapes of run:
//  - one process for every rank: device-to-device copies (any number of virtual ranks per GPU,
//    spread round-robin over `devices` GPUs), or NCCL with one GPU per rank (ncclCommInitAll);
//  - one rank per process under mpirun: NCCL, with the ncclUniqueId sent from rank 0 to the
//    others over the MPI transport.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/plan/schedule.h"
#include "core/workload/workload.h"
#include "executor/cuda/cuda_device_ops.h"
#include "executor/execute.h"
#include "executor/io/tensor.h"
#include "executor/timing/op_timing.h"
#include "executor/transport/transport.h"

namespace meshplan::exec::cuda {

// Whether the NCCL that `config` needs (backend cuda, transport kNccl) loads on this machine: Ok,
// or the kInvalidInput error of LoadNccl (executor/cuda/nccl_library.h) naming libnccl.so.2 and
// the reason. For callers that must fail before a run starts (every process of an MPI job agrees
// on its setup first); the runs below load NCCL themselves and fail the same way.
Status NcclAvailable(const ExecuteConfig& config);

// Every rank in this process: config.transport kLocal (device-to-device copies, ranks spread
// round-robin over config.devices GPUs) or kNccl (one GPU per rank). Every output element must be
// produced (else kInternal) unless config.check_coverage is false. Inputs are rounded to
// config.run.type (bf16 or fp16).
Result<ExecutionResult> ExecuteOnCuda(const Schedule& schedule, const Workload& workload,
                                      const InputSource& inputs, const ExecuteConfig& config);

// This process's rank (transport.rank()) of a job with one rank per process, NCCL transfers set up
// over `transport`. Outputs and coverage as ExecuteRank (executor/execute.h).
Status ExecuteRankOnCuda(const Schedule& schedule, const Workload& workload,
                         const InputSource& inputs, const ExecuteConfig& config,
                         Transport& transport, AttentionTensors<float>* outputs,
                         std::vector<uint8_t>* covered, std::vector<OpTiming>* timings,
                         std::string* device);

}  // namespace meshplan::exec::cuda
