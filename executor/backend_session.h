// What a backend keeps from one run to the next within a process, so that repeated runs
// (`execute --repeat`, `meshplan bench`, tests) measure the kernels rather than their set-up.
//
// The CUDA backend keeps its cuDNN handles and the cuDNN graphs built for each piece shape there
// (building one costs tens of milliseconds, and a run of P virtual ranks may need dozens: without a
// session every run rebuilt them, which on an H200 added 0.1-0.7 s to runs whose kernels take a
// few milliseconds; docs/gpu-results.md). The CPU backend keeps nothing.
//
// One run at a time per session. Give the session back (destroy it) before the process ends, so
// the CUDA state goes while its context is still alive.
#pragma once

#include <memory>

namespace meshplan::exec {

struct BackendSession {
  // The CUDA backend's state (cuda::CudnnDevices, executor/cuda/cuda_device_ops.h), made by the
  // first CUDA run given this session; type-erased so that this header needs no CUDA.
  std::shared_ptr<void> cuda;
};

}  // namespace meshplan::exec
