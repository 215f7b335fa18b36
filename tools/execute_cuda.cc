// `meshplan execute --backend cuda`: flags of the CUDA backend of the execution engine
// (exec::Execute with Backend::kCuda), and the kernel settings calibrate shares with it. Compiled
// into every binary; without CUDA in the build the entry points say so (CheckFlags refuses the
// backend before they are reached).
#include <cstdio>
#include <string>

#include "tools/cli_common.h"
#include "tools/execute_run.h"
#if MESHPLAN_HAVE_CUDA
#include "executor/cuda/cuda_execute.h"
#include "executor/device/half_float.h"
#include "executor/output_check.h"
#endif

namespace meshplan::tools {

#if MESHPLAN_HAVE_CUDA
namespace {

exec::InputType TypeOf(const ExecuteFlags& flags, const Workload& w) {
  if (flags.dtype == "fp16") return exec::InputType::kFp16;
  if (flags.dtype == "bf16") return exec::InputType::kBf16;
  return w.dtype == DType::kFp16 ? exec::InputType::kFp16 : exec::InputType::kBf16;
}

exec::KernelPath PathOf(const std::string& kernels) {
  if (kernels == "tensor") return exec::KernelPath::kTensorCore;
  if (kernels == "simt") return exec::KernelPath::kSimt;
  if (kernels == "cudnn") return exec::KernelPath::kCudnn;
  return exec::KernelPath::kAuto;
}

}  // namespace

bool CudaBackendBuilt() { return true; }

Status SetCudaKernels(const std::string& kernels, exec::InputType type,
                      exec::ExecuteConfig* config) {
  if (kernels != "auto" && kernels != "cudnn" && kernels != "tensor" && kernels != "simt") {
    return Status::Invalid("--kernels: '" + kernels + "' is not one of auto, cudnn, tensor, simt");
  }
  config->backend = exec::Backend::kCuda;
  config->run.type = type;
  config->run.path = PathOf(kernels);
  return Status::Ok();
}

Status PrepareCuda(const ExecuteFlags& flags, const Plan& plan, Prepared* p) {
  if (!flags.dtype.empty() && flags.dtype != "bf16" && flags.dtype != "fp16") {
    return Status::Invalid("--dtype: '" + flags.dtype + "' is not one of bf16, fp16");
  }
  const exec::InputType type = TypeOf(flags, plan.workload);
  MESHPLAN_RETURN_IF_ERROR(SetCudaKernels(flags.kernels, type, &p->config));
  if (flags.devices < 0)
    return Status::Invalid("--devices: must be 0 (every GPU) or a positive count");
  p->config.transport =
      flags.transport == "local" ? exec::TransportKind::kLocal : exec::TransportKind::kNccl;
  p->config.devices = flags.devices;
  p->config.run.progress_timeout_s = flags.timeout_s;
  // NCCL is loaded at run time (executor/cuda/nccl_library.h): say here, before any run starts,
  // when it does not load, so that under mpirun every process learns it at the job's start.
  MESHPLAN_RETURN_IF_ERROR(
      exec::cuda::NcclAvailable(p->config).WithContext("--transport " + flags.transport));
  p->precision = std::string(exec::InputTypeName(type)) +
                 " inputs (the check's reference uses the same rounded values), fp32 accumulation";
  return Status::Ok();
}

std::string CudaRunLine(const ExecuteFlags& flags, const Prepared& p, const std::string& device) {
  const std::string kernels =
      flags.kernels == "auto" ? "tensor-core kernels where supported" : flags.kernels + " kernels";
  return "backend cuda (" + device + "), " + kernels + ", transport " + flags.transport + ", " +
         std::to_string(p.run.schedule.num_ranks) + " ranks";
}

#else  // built without CUDA

bool CudaBackendBuilt() { return false; }

namespace {
Status NotBuilt() { return Status::Invalid("--backend cuda: this binary was built without CUDA"); }
}  // namespace

Status SetCudaKernels(const std::string&, exec::InputType, exec::ExecuteConfig*) {
  return NotBuilt();
}
Status PrepareCuda(const ExecuteFlags&, const Plan&, Prepared*) { return NotBuilt(); }
std::string CudaRunLine(const ExecuteFlags&, const Prepared&, const std::string&) {
  return "backend cuda";
}
#endif

}  // namespace meshplan::tools
