// Status-returning checks of CUDA runtime and NCCL calls: the message names the rank, the call,
// the error and the source file and line ("rank 3: cudaMallocAsync(...) failed: out of memory
// (executor/cuda/cuda_device_ops.cc:120)"). The engine adds the op that issued the call.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "core/base/status.h"

namespace meshplan::exec::cuda {

inline Status CudaStatus(cudaError_t error, int rank, const char* call, const char* file,
                         int line) {
  if (error == cudaSuccess) return Status::Ok();
  std::string where = file;
  if (const size_t at = where.rfind("executor/"); at != std::string::npos) where = where.substr(at);
  return Status::Internal((rank >= 0 ? "rank " + std::to_string(rank) + ": " : std::string()) +
                          call + " failed: " + cudaGetErrorString(error) + " (" + where + ":" +
                          std::to_string(line) + ")");
}

}  // namespace meshplan::exec::cuda

#define MESHPLAN_CUDA_CHECK(rank, call) \
  MESHPLAN_RETURN_IF_ERROR(             \
      ::meshplan::exec::cuda::CudaStatus((call), (rank), #call, __FILE__, __LINE__))
