// DeviceOps on CUDA devices (executor/device/device_ops.h). Every rank this process runs has a
// device and five non-blocking streams: compute, send, recv and collective (the schedule's four)
// plus one for frees. Each op records a start and an end event: BeginOp makes the op's stream wait
// for its deps' end events, and the events give the per-op timeline. Memory comes from each
// device's stream-ordered pool (cudaMallocAsync), freed once the last ops using a buffer ended.
//
// Transfers: kLocalCopies copies device to device (cudaMemcpyPeerAsync; any number of virtual
// ranks per GPU); kNccl posts ncclSend/ncclRecv, one NCCL group per exchange step, on
// communicators the caller made (one per local rank, one GPU each).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "executor/device/device_ops.h"
#include "executor/timing/op_timing.h"

namespace meshplan::exec::cuda {

class CudnnAttention;  // executor/cuda/cudnn_attention.h

enum class TransferKind : uint8_t { kLocalCopies, kNccl };

struct NcclLibrary;  // executor/cuda/nccl_library.h

// The cuDNN path of each device a process's runs used, and why cuDNN is missing when it is. A run
// makes its own; runs given one BackendSession (executor/backend_session.h) share one, so the
// graphs built by a run serve the next. Destroys each handle with its device current.
struct CudnnDevices {
  CudnnDevices();
  CudnnDevices(const CudnnDevices&) = delete;
  CudnnDevices& operator=(const CudnnDevices&) = delete;
  ~CudnnDevices();
  std::map<int, std::unique_ptr<CudnnAttention>> by_device;
  std::string missing;  // why kAuto runs without cuDNN (empty when it has it or was not asked)
};

struct CudaOpsConfig {
  // kAuto and kCudnn open cuDNN in Prepare (one CudnnAttention per device, shared by its ranks);
  // kAuto runs on the own kernels when cuDNN is missing, kCudnn fails.
  KernelPath path = KernelPath::kAuto;
  TransferKind transfers = TransferKind::kLocalCopies;
  std::vector<int> device_of_rank;  // for every rank (entries of ranks not run here are ignored)
  // kNccl: the communicator of each rank run here (ncclComm_t, type-erased so this header needs
  // no NCCL), indexed by rank; null for ranks not run here. CudaDeviceOps owns them from its
  // construction: it destroys them at the end, or aborts them when the run fails or hangs.
  std::vector<void*> nccl_comms;
  // kNccl: the NCCL the communicators were made with (LoadNccl); every NCCL call goes through it,
  // and CudaDeviceOps holds it until it has destroyed or aborted the communicators.
  std::shared_ptr<const NcclLibrary> nccl;
  // Fill every fresh allocation with all-ones bytes (NaN in bf16, fp16 and fp32), so a kernel that
  // reads memory nobody wrote shows up as NaN in the outputs. For validation runs.
  bool poison_allocations = false;
  // kAuto and kCudnn: the cuDNN objects to use and extend (shared with other runs); null: the
  // run makes its own.
  std::shared_ptr<CudnnDevices> cudnn;
};

class CudaDeviceOps : public DeviceOps {
 public:
  explicit CudaDeviceOps(CudaOpsConfig config);
  ~CudaDeviceOps() override;

  std::string Describe() const override;
  Status Prepare(const Schedule& schedule, const std::vector<uint8_t>& local) override;
  Result<void*> Allocate(int32_t rank, int64_t bytes, StreamId stream) override;
  Status Free(int32_t rank, void* ptr, const StreamUses& uses) override;
  Result<void*> Upload(int32_t rank, const void* host, int64_t bytes) override;
  Status Download(int32_t rank, void* host, const void* device, int64_t bytes) override;
  Status Start() override;
  Status BeginOp(int32_t rank, uint32_t op, StreamId stream,
                 const std::vector<uint32_t>& deps) override;
  Status EndOp(int32_t rank, uint32_t op, StreamId stream) override;
  Status Forward(int32_t rank, StreamId stream, const BlockProblem& p, const TensorView& q,
                 const TensorView& k, const TensorView& v, const TensorView& o,
                 const TensorView& lse) override;
  Status Backward(int32_t rank, StreamId stream, const BlockProblem& p, const TensorView& q,
                  const TensorView& k, const TensorView& v, const TensorView& d_o,
                  const TensorView& lse, const TensorView& delta, const TensorView& dq,
                  const TensorView& dk, const TensorView& dv) override;
  Status MergePartial(int32_t rank, StreamId stream, float* o, float* lse, const float* o_in,
                      const float* lse_in, int64_t count, int32_t dim) override;
  Status AddInto(int32_t rank, StreamId stream, float* acc, const float* in, int64_t n) override;
  Status Delta(int32_t rank, StreamId stream, InputType type, const float* o, const void* d_o,
               float* delta, int64_t batch, int64_t rows, int32_t heads, int32_t dim) override;
  Status Fill(int32_t rank, StreamId stream, float* data, float value, int64_t n) override;
  Status RowCopy(int32_t rank, StreamId stream, const exec::RowCopy& copy) override;
  Status Exchange(const std::vector<Transfer>& transfers) override;
  Status Finish(double timeout_s, std::vector<std::vector<OpTiming>>* times) override;
  // Aborts the NCCL communicators (peers' pending transfers fail) and drains the streams.
  void Abort(const Status& why) override;

 private:
  struct RankDevice;
  Status Use(int32_t rank);  // makes the rank's device current
  // The device's cuDNN path when it can compute this block, else null (own kernels, or an error
  // in `refusal` under kCudnn).
  CudnnAttention* CudnnFor(int32_t rank, const BlockProblem& p, const TensorView& q,
                           const TensorView& k, bool backward, Status& refusal);
  RankDevice& At(int32_t rank) { return *ranks_[static_cast<size_t>(rank)]; }
  void AbortCommunicators();
  std::string KernelsUsed() const;  // which kernels ran the blocks, for Describe

  CudaOpsConfig config_;
  std::vector<std::unique_ptr<RankDevice>> ranks_;  // null for ranks not run here
  std::shared_ptr<CudnnDevices> cudnn_;             // config_.cudnn, or this run's own
  // Pieces computed and graphs built by cudnn_ before this run (it may be shared), so that the
  // report counts this run's alone.
  int64_t pieces_before_ = 0;
  int64_t gathered_before_ = 0;
  int64_t graphs_before_ = 0;
  int64_t own_kernel_blocks_ = 0;  // blocks kAuto ran on the own kernels
  bool finished_ = false;
};

// Number of visible CUDA devices, or an error saying why there are none (no driver, no device).
Result<int> CudaDeviceCount();
// "NVIDIA H200 (sm_90, 139.8 GiB)"
std::string CudaDeviceName(int device);
// The device's global memory in bytes (cudaDeviceProp::totalGlobalMem), 0 when unknown.
double CudaDeviceMemoryBytes(int device);

}  // namespace meshplan::exec::cuda
