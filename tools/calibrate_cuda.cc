#include "tools/calibrate_cuda.h"

#if MESHPLAN_HAVE_CUDA
#include "executor/cuda/cuda_device_ops.h"
#endif

namespace meshplan::tools {

#if MESHPLAN_HAVE_CUDA

Result<CudaCalibrationDevice> FirstCudaDevice() {
  auto count = exec::cuda::CudaDeviceCount();
  if (!count.ok()) return Status::Invalid("--backend cuda: " + count.status().message());
  CudaCalibrationDevice device;
  device.model = exec::cuda::CudaDeviceName(0);
  device.memory_bytes = exec::cuda::CudaDeviceMemoryBytes(0);
  if (!(device.memory_bytes > 0)) {
    return Status::Invalid("--backend cuda: the memory of " + device.model +
                           " could not be read (cudaGetDeviceProperties failed)");
  }
  return device;
}

#else  // built without CUDA

Result<CudaCalibrationDevice> FirstCudaDevice() {
  return Status::Invalid("--backend cuda: this binary was built without CUDA");
}

#endif

}  // namespace meshplan::tools
