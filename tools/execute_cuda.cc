// `meshplan execute --backend cuda`: the plan's schedule on CUDA GPUs through the device engine
// (executor/cuda/cuda_execute.h). Compiled into every binary; without CUDA in the build the entry
// points say so (CheckFlags refuses the backend before they are reached).
#include <cstdio>
#include <string>

#include "tools/cli_common.h"
#include "tools/execute_run.h"
#if MESHPLAN_HAVE_CUDA
#include "executor/cuda/cuda_execute.h"
#include "executor/device/half_float.h"
#endif

namespace meshplan::tools {

#if MESHPLAN_HAVE_CUDA
namespace {

exec::InputType TypeOf(const ExecuteFlags& flags, const Workload& w) {
  if (flags.dtype == "fp16") return exec::InputType::kFp16;
  if (flags.dtype == "bf16") return exec::InputType::kBf16;
  return w.dtype == DType::kFp16 ? exec::InputType::kFp16 : exec::InputType::kBf16;
}

exec::KernelPath PathOf(const ExecuteFlags& flags) {
  if (flags.kernels == "tensor") return exec::KernelPath::kTensorCore;
  if (flags.kernels == "simt") return exec::KernelPath::kSimt;
  return exec::KernelPath::kAuto;
}

exec::cuda::CudaRunConfig ConfigOf(const ExecuteFlags& flags, const Prepared& p) {
  exec::cuda::CudaRunConfig c;
  c.type = TypeOf(flags, p.plan.workload);
  c.path = PathOf(flags);
  c.transfers = flags.transport == "local" ? exec::cuda::TransferKind::kLocalCopies : exec::cuda::TransferKind::kNccl;
  c.devices = flags.devices;
  c.timeout_s = flags.timeout_s;
  c.fail_rank = p.options.fail_rank;
  c.fail_op = p.options.fail_op;
  return c;
}

void Round(exec::InputType type, exec::TensorF& t) {
  for (float& x : t.data) x = exec::RoundToInput(type, x);
}

}  // namespace

bool CudaBackendBuilt() { return true; }

Status PrepareCuda(const ExecuteFlags& flags, Prepared* p) {
  if (!flags.dtype.empty() && flags.dtype != "bf16" && flags.dtype != "fp16") {
    return Status::Invalid("--dtype: '" + flags.dtype + "' is not one of bf16, fp16");
  }
  if (flags.kernels != "auto" && flags.kernels != "tensor" && flags.kernels != "simt") {
    return Status::Invalid("--kernels: '" + flags.kernels + "' is not one of auto, tensor, simt");
  }
  if (flags.devices < 0) return Status::Invalid("--devices: must be 0 (every GPU) or a positive count");
  const exec::InputType type = TypeOf(flags, p->plan.workload);
  for (exec::TensorF* t : {&p->inputs.q, &p->inputs.k, &p->inputs.v, &p->inputs.d_o}) Round(type, *t);
  p->tolerance = type == exec::InputType::kBf16 ? kCheckToleranceBf16 : kCheckToleranceFp16;
  p->precision = std::string(exec::InputTypeName(type)) +
                 " inputs (the check's reference uses the same rounded values), fp32 accumulation";
  return Status::Ok();
}

int RunOnCuda(const ExecuteFlags& flags, const Prepared& p) {
  auto run = exec::cuda::ExecuteOnCuda(p.schedule, p.plan.workload, p.inputs, ConfigOf(flags, p));
  if (!run.ok()) {
    if (run.status().code() == ErrorCode::kInvalidInput) return ReportError(run.status().WithContext("--backend cuda"));
    std::fprintf(stderr, "meshplan: error: run failed: %s\n", run.status().message().c_str());
    return kExitFailure;
  }
  const std::string kernels = flags.kernels == "auto" ? "tensor-core kernels where supported" : flags.kernels + " kernels";
  const std::string run_line = "backend cuda (" + run->device + "), " + kernels + ", transport " + flags.transport +
                               ", " + std::to_string(p.schedule.num_ranks) + " ranks";
  return FinishExecution(flags, p, run->outputs, run->timings, run->wall_s, run_line);
}

Status RunRankOnCuda(const ExecuteFlags& flags, const Prepared& p, exec::Transport& transport,
                     exec::AttentionTensors<float>* outputs, std::vector<uint8_t>* covered,
                     std::vector<exec::OpTiming>* timings, std::string* device) {
  return exec::cuda::ExecuteRankOnCuda(p.schedule, p.plan.workload, p.inputs, ConfigOf(flags, p), transport, outputs,
                                       covered, timings, device);
}

#else  // built without CUDA

bool CudaBackendBuilt() { return false; }

namespace {
Status NotBuilt() { return Status::Invalid("--backend cuda: this binary was built without CUDA"); }
}  // namespace

Status PrepareCuda(const ExecuteFlags&, Prepared*) { return NotBuilt(); }
int RunOnCuda(const ExecuteFlags&, const Prepared&) { return ReportError(NotBuilt()); }
Status RunRankOnCuda(const ExecuteFlags&, const Prepared&, exec::Transport&, exec::AttentionTensors<float>*,
                     std::vector<uint8_t>*, std::vector<exec::OpTiming>*, std::string*) {
  return NotBuilt();
}

#endif

}  // namespace meshplan::tools
