// `meshplan calibrate --backend cuda`: the device it measures (tools/calibrate_cuda.cc). Compiled
// into every binary; without CUDA in the build it says so.
#pragma once

#include <string>

#include "core/base/status.h"

namespace meshplan::tools {

struct CudaCalibrationDevice {
  std::string model;  // exec::cuda::CudaDeviceName: "NVIDIA H200 (sm_90, 139.8 GiB)"
  double memory_bytes = 0;
};

// The first visible CUDA device, the one a calibration's virtual ranks share (ExecuteConfig's
// devices = 1). kInvalidInput naming --backend cuda and why there is none: no usable driver or no
// device (exec::cuda::CudaDeviceCount's reason), or a binary built without CUDA.
Result<CudaCalibrationDevice> FirstCudaDevice();

}  // namespace meshplan::tools
