#include "executor/cuda/cuda_device_ops.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <set>
#include <thread>

#include "executor/cuda/attention_kernels.h"
#include "executor/cuda/cuda_check.h"
#include "executor/cuda/cudnn_attention.h"
#if MESHPLAN_HAVE_NCCL
#include "executor/cuda/nccl_library.h"
#endif

namespace meshplan::exec::cuda {
namespace {

constexpr int kScheduleStreams = 4;
const char* kStreamNames[] = {"compute", "send", "recv", "collective"};

#if MESHPLAN_HAVE_NCCL
Status NcclStatus(const NcclLibrary& nccl, ncclResult_t result, int rank, const char* call,
                  const char* file, int line) {
  if (result == ncclSuccess) return Status::Ok();
  std::string where = file;
  if (const size_t at = where.rfind("executor/"); at != std::string::npos) where = where.substr(at);
  return Status::Internal((rank >= 0 ? "rank " + std::to_string(rank) + ": " : std::string()) +
                          call + " failed: " + nccl.GetErrorString(result) + " (" + where + ":" +
                          std::to_string(line) + ")");
}
#endif

}  // namespace

struct CudaDeviceOps::RankDevice {
  int device = 0;
  std::array<cudaStream_t, kScheduleStreams> streams{};
  cudaStream_t release = nullptr;
  cudaStream_t upload = nullptr;
  cudaEvent_t origin = nullptr;
  std::vector<cudaEvent_t> start, end;  // per op, created when the op is issued
  void* comm = nullptr;                 // ncclComm_t

  cudaStream_t Stream(StreamId s) const { return streams[static_cast<int>(s)]; }
};

Result<int> CudaDeviceCount() {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    return Status::Invalid(std::string("no usable CUDA device: ") + cudaGetErrorString(error));
  }
  if (count == 0) return Status::Invalid("no CUDA device is visible");
  return count;
}

std::string CudaDeviceName(int device) {
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, device) != cudaSuccess)
    return "CUDA device " + std::to_string(device);
  char memory[32];
  std::snprintf(memory, sizeof memory, "%.1f GiB",
                static_cast<double>(prop.totalGlobalMem) / (1ull << 30));
  return std::string(prop.name) + " (sm_" + std::to_string(prop.major) +
         std::to_string(prop.minor) + ", " + memory + ")";
}

double CudaDeviceMemoryBytes(int device) {
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) return 0;
  return static_cast<double>(prop.totalGlobalMem);
}

CudnnDevices::CudnnDevices() = default;

CudnnDevices::~CudnnDevices() {
  for (auto& [device, cudnn] : by_device) {
    cudaSetDevice(device);
    cudnn.reset();
  }
}

CudaDeviceOps::CudaDeviceOps(CudaOpsConfig config)
    : config_(std::move(config)),
      cudnn_(config_.cudnn ? config_.cudnn : std::make_shared<CudnnDevices>()) {}

CudaDeviceOps::~CudaDeviceOps() {
  if (!finished_) (void)Finish(10.0, nullptr);  // drain (or abort) whatever an error left in flight
  // cuDNN handles go first when this run owns them (its work has drained above); shared ones
  // stay for the next run (the handle's stream is set again before every use).
  cudnn_.reset();
#if MESHPLAN_HAVE_NCCL
  // Communicators never handed to a rank (Prepare failed early) and those of finished runs.
  for (size_t r = 0; r < config_.nccl_comms.size(); ++r) {
    void* comm = config_.nccl_comms[r];
    const bool aborted = r < ranks_.size() && ranks_[r] != nullptr && ranks_[r]->comm == nullptr;
    if (comm != nullptr && !aborted && config_.nccl != nullptr)
      config_.nccl->CommDestroy(static_cast<ncclComm_t>(comm));
  }
#endif
  for (size_t r = 0; r < ranks_.size(); ++r) {
    RankDevice* d = ranks_[r].get();
    if (d == nullptr) continue;
    cudaSetDevice(d->device);
    for (cudaEvent_t e : d->start) {
      if (e != nullptr) cudaEventDestroy(e);
    }
    for (cudaEvent_t e : d->end) {
      if (e != nullptr) cudaEventDestroy(e);
    }
    if (d->origin != nullptr) cudaEventDestroy(d->origin);
    for (cudaStream_t s : d->streams) {
      if (s != nullptr) cudaStreamDestroy(s);
    }
    if (d->release != nullptr) cudaStreamDestroy(d->release);
    if (d->upload != nullptr) cudaStreamDestroy(d->upload);
  }
}

std::string CudaDeviceOps::Describe() const {
  std::set<int> devices;
  int ranks = 0;
  for (const auto& d : ranks_) {
    if (d == nullptr) continue;
    devices.insert(d->device);
    ++ranks;
  }
  const std::string name = devices.empty() ? "no device" : CudaDeviceName(*devices.begin());
  std::string transfers =
      config_.transfers == TransferKind::kNccl ? "NCCL" : "device-to-device copies";
#if MESHPLAN_HAVE_NCCL
  // Which NCCL was loaded at run time (LD_LIBRARY_PATH decides, not the build).
  int version = 0;
  if (config_.nccl != nullptr && config_.nccl->GetVersion(&version) == ncclSuccess) {
    transfers += " " + NcclVersionName(version);
  }
#endif
  return "CUDA " + name + ", " + std::to_string(ranks) + (ranks == 1 ? " rank" : " ranks") +
         " on " + std::to_string(devices.size()) + (devices.size() == 1 ? " GPU" : " GPUs") + ", " +
         transfers + ", " + KernelsUsed();
}

std::string CudaDeviceOps::KernelsUsed() const {
  if (config_.path == KernelPath::kTensorCore) return "own tensor-core kernels";
  if (config_.path == KernelPath::kSimt) return "own SIMT kernels";
  if (cudnn_->by_device.empty()) {
    return "own kernels" +
           (cudnn_->missing.empty() ? std::string() : " (no cuDNN: " + cudnn_->missing + ")");
  }
  int64_t pieces = -pieces_before_, graphs = -graphs_before_, gathered = -gathered_before_;
  for (const auto& [device, c] : cudnn_->by_device) {
    pieces += c->pieces_run();
    graphs += c->graphs_built();
    gathered += c->blocks_gathered();
  }
  std::string s = cudnn_->by_device.begin()->second->Describe();
  if (pieces > 0 || own_kernel_blocks_ > 0) {
    s += ": " + std::to_string(pieces) + " pieces, own kernels for " +
         std::to_string(own_kernel_blocks_) + (own_kernel_blocks_ == 1 ? " block" : " blocks") +
         "; " + std::to_string(gathered) + (gathered == 1 ? " block" : " blocks") +
         " gathered into position order; " + std::to_string(graphs) +
         (graphs == 1 ? " cuDNN graph" : " cuDNN graphs") + " built in this run";
  }
  return s;
}

Status CudaDeviceOps::Use(int32_t rank) {
  if (rank < 0 || static_cast<size_t>(rank) >= ranks_.size() || ranks_[rank] == nullptr) {
    return Status::Internal("rank " + std::to_string(rank) + " is not run by this process");
  }
  MESHPLAN_CUDA_CHECK(rank, cudaSetDevice(ranks_[rank]->device));
  return Status::Ok();
}

Status CudaDeviceOps::Prepare(const Schedule& schedule, const std::vector<uint8_t>& local) {
  pieces_before_ = graphs_before_ = gathered_before_ = 0;
  for (const auto& [device, c] : cudnn_->by_device) {
    pieces_before_ += c->pieces_run();
    graphs_before_ += c->graphs_built();
    gathered_before_ += c->blocks_gathered();
  }
  ranks_.clear();
  ranks_.resize(static_cast<size_t>(schedule.num_ranks));
  MESHPLAN_ASSIGN_OR_RETURN(auto count, CudaDeviceCount());
  if (config_.device_of_rank.size() != static_cast<size_t>(schedule.num_ranks)) {
    return Status::Internal("device assignment does not cover every rank");
  }
  if (config_.transfers == TransferKind::kNccl) {
#if MESHPLAN_HAVE_NCCL
    if (config_.nccl_comms.size() != static_cast<size_t>(schedule.num_ranks)) {
      return Status::Internal("NCCL communicators do not cover every rank");
    }
    if (config_.nccl == nullptr)
      return Status::Internal("NCCL transfers without a loaded NCCL library");
#else
    return Status::Invalid("NCCL transfers: this binary was built without NCCL");
#endif
  }
  std::set<int> used;
  for (int32_t r = 0; r < schedule.num_ranks; ++r) {
    if (!local[r]) continue;
    const int device = config_.device_of_rank[r];
    if (device < 0 || device >= count) {
      return Status::Invalid("rank " + std::to_string(r) + ": device " + std::to_string(device) +
                             " does not exist (" + std::to_string(count) + " visible)");
    }
    auto d = std::make_unique<RankDevice>();
    d->device = device;
    if (config_.path == KernelPath::kCudnn && !cudnn_->missing.empty()) {
      return Status::Invalid("--kernels cudnn: " + cudnn_->missing);
    }
    if ((config_.path == KernelPath::kAuto || config_.path == KernelPath::kCudnn) &&
        cudnn_->missing.empty() && cudnn_->by_device.count(device) == 0) {
      MESHPLAN_CUDA_CHECK(r, cudaSetDevice(device));
      auto made = CreateCudnnAttention(device);
      if (made.ok()) {
        cudnn_->by_device[device] = std::move(*made);
      } else if (config_.path == KernelPath::kCudnn) {
        return Status::Invalid("--kernels cudnn: " + made.status().message());
      } else {
        cudnn_->missing = made.status().message();
      }
    }
    if (config_.transfers == TransferKind::kNccl) d->comm = config_.nccl_comms[r];
    MESHPLAN_CUDA_CHECK(r, cudaSetDevice(device));
    if (used.insert(device).second) {
      // Keep freed memory in the pool for reuse instead of returning it to the driver.
      cudaMemPool_t pool;
      MESHPLAN_CUDA_CHECK(r, cudaDeviceGetDefaultMemPool(&pool, device));
      uint64_t threshold = UINT64_MAX;
      MESHPLAN_CUDA_CHECK(
          r, cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
    }
    for (cudaStream_t& s : d->streams)
      MESHPLAN_CUDA_CHECK(r, cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    MESHPLAN_CUDA_CHECK(r, cudaStreamCreateWithFlags(&d->release, cudaStreamNonBlocking));
    MESHPLAN_CUDA_CHECK(r, cudaStreamCreateWithFlags(&d->upload, cudaStreamNonBlocking));
    MESHPLAN_CUDA_CHECK(r, cudaEventCreate(&d->origin));
    d->start.assign(schedule.ranks[r].ops.size(), nullptr);
    d->end.assign(schedule.ranks[r].ops.size(), nullptr);
    ranks_[r] = std::move(d);
  }
  // Direct copies between the GPUs in use, where the hardware allows (else copies are staged).
  for (int a : used) {
    for (int b : used) {
      int can = 0;
      if (a != b && cudaDeviceCanAccessPeer(&can, a, b) == cudaSuccess && can) {
        cudaSetDevice(a);
        const cudaError_t e = cudaDeviceEnablePeerAccess(b, 0);
        if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled)
          return CudaStatus(e, -1, "cudaDeviceEnablePeerAccess", __FILE__, __LINE__);
        cudaGetLastError();  // clear an "already enabled" error
      }
    }
  }
  return Status::Ok();
}

Result<void*> CudaDeviceOps::Allocate(int32_t rank, int64_t bytes, StreamId stream) {
  MESHPLAN_RETURN_IF_ERROR(Use(rank));
  void* ptr = nullptr;
  MESHPLAN_CUDA_CHECK(rank,
                      cudaMallocAsync(&ptr, static_cast<size_t>(std::max<int64_t>(bytes, 256)),
                                      At(rank).Stream(stream)));
  if (config_.poison_allocations && bytes > 0) {
    MESHPLAN_CUDA_CHECK(
        rank, cudaMemsetAsync(ptr, 0xFF, static_cast<size_t>(bytes), At(rank).Stream(stream)));
  }
  return ptr;
}

Status CudaDeviceOps::Free(int32_t rank, void* ptr, const StreamUses& uses) {
  MESHPLAN_RETURN_IF_ERROR(Use(rank));
  RankDevice& d = At(rank);
  for (int s = 0; s < kScheduleStreams; ++s) {
    if (uses[s] < 0) continue;
    cudaEvent_t e = d.end[static_cast<size_t>(uses[s])];
    if (e == nullptr)
      return Status::Internal("rank " + std::to_string(rank) +
                              ": buffer freed before its last op ended");
    MESHPLAN_CUDA_CHECK(rank, cudaStreamWaitEvent(d.release, e, 0));
  }
  MESHPLAN_CUDA_CHECK(rank, cudaFreeAsync(ptr, d.release));
  return Status::Ok();
}

Result<void*> CudaDeviceOps::Upload(int32_t rank, const void* host, int64_t bytes) {
  MESHPLAN_RETURN_IF_ERROR(Use(rank));
  RankDevice& d = At(rank);
  void* ptr = nullptr;
  MESHPLAN_CUDA_CHECK(
      rank, cudaMallocAsync(&ptr, static_cast<size_t>(std::max<int64_t>(bytes, 256)), d.upload));
  if (bytes > 0) {
    MESHPLAN_CUDA_CHECK(rank, cudaMemcpyAsync(ptr, host, static_cast<size_t>(bytes),
                                              cudaMemcpyHostToDevice, d.upload));
  }
  // The host buffer may go away, and every other stream may use the data: finish here.
  MESHPLAN_CUDA_CHECK(rank, cudaStreamSynchronize(d.upload));
  return ptr;
}

Status CudaDeviceOps::Download(int32_t rank, void* host, const void* device, int64_t bytes) {
  MESHPLAN_RETURN_IF_ERROR(Use(rank));
  if (bytes > 0)
    MESHPLAN_CUDA_CHECK(
        rank, cudaMemcpy(host, device, static_cast<size_t>(bytes), cudaMemcpyDeviceToHost));
  return Status::Ok();
}

Status CudaDeviceOps::Start() {
  for (size_t r = 0; r < ranks_.size(); ++r) {
    if (ranks_[r] == nullptr) continue;
    const int32_t rank = static_cast<int32_t>(r);
    MESHPLAN_RETURN_IF_ERROR(Use(rank));
    // Every stream idles here (inputs were uploaded synchronously), so the origin event recorded
    // on the compute stream marks the start for all of them.
    MESHPLAN_CUDA_CHECK(rank,
                        cudaEventRecord(ranks_[r]->origin, ranks_[r]->Stream(StreamId::kCompute)));
  }
  finished_ = false;
  return Status::Ok();
}

Status CudaDeviceOps::BeginOp(int32_t rank, uint32_t op, StreamId stream,
                              const std::vector<uint32_t>& deps) {
  MESHPLAN_RETURN_IF_ERROR(Use(rank));
  RankDevice& d = At(rank);
  const cudaStream_t s = d.Stream(stream);
  for (uint32_t dep : deps) {
    cudaEvent_t e = d.end[dep];
    if (e == nullptr)
      return Status::Internal("dep op " + std::to_string(dep) + " was not issued before");
    MESHPLAN_CUDA_CHECK(rank, cudaStreamWaitEvent(s, e, 0));
  }
  if (d.start[op] == nullptr) MESHPLAN_CUDA_CHECK(rank, cudaEventCreate(&d.start[op]));
  MESHPLAN_CUDA_CHECK(rank, cudaEventRecord(d.start[op], s));
  return Status::Ok();
}

Status CudaDeviceOps::EndOp(int32_t rank, uint32_t op, StreamId stream) {
  MESHPLAN_RETURN_IF_ERROR(Use(rank));
  RankDevice& d = At(rank);
  if (d.end[op] == nullptr) MESHPLAN_CUDA_CHECK(rank, cudaEventCreate(&d.end[op]));
  MESHPLAN_CUDA_CHECK(rank, cudaEventRecord(d.end[op], d.Stream(stream)));
  return Status::Ok();
}

CudnnAttention* CudaDeviceOps::CudnnFor(int32_t rank, const BlockProblem& p, const TensorView& q,
                                        const TensorView& k, bool backward, Status& refusal) {
  auto it = cudnn_->by_device.find(At(rank).device);
  if (it != cudnn_->by_device.end() && it->second->Supports(p, q, k, backward))
    return it->second.get();
  if (config_.path == KernelPath::kCudnn) {
    refusal = Status::Invalid(
        "rank " + std::to_string(rank) + ": --kernels cudnn: cuDNN cannot compute a " +
        (backward ? "backward" : "forward") + " block of " + std::to_string(q.rows) + " x " +
        std::to_string(k.rows) + " rows (mask kind " +
        std::to_string(static_cast<int32_t>(p.mask.params.kind)) +
        ", or positions that are neither a few runs of consecutive tokens nor one stride); use "
        "--kernels auto");
  } else if (config_.path == KernelPath::kAuto) {
    ++own_kernel_blocks_;
  }
  return nullptr;
}

Status CudaDeviceOps::Forward(int32_t rank, StreamId stream, const BlockProblem& p,
                              const TensorView& q, const TensorView& k, const TensorView& v,
                              const TensorView& o, const TensorView& lse) {
  MESHPLAN_RETURN_IF_ERROR(Use(rank));
  Status refusal;
  if (CudnnAttention* c = CudnnFor(rank, p, q, k, false, refusal)) {
    Status run = c->Forward(p, q, k, v, o, lse, At(rank).Stream(stream));
    if (!run.ok()) return Status::Internal("rank " + std::to_string(rank) + ": " + run.message());
    return Status::Ok();
  }
  MESHPLAN_RETURN_IF_ERROR(refusal);
  MESHPLAN_CUDA_CHECK(
      rank, LaunchBlockForward(p, q, k, v, o, lse, config_.path, At(rank).Stream(stream)));
  return Status::Ok();
}

Status CudaDeviceOps::Backward(int32_t rank, StreamId stream, const BlockProblem& p,
                               const TensorView& q, const TensorView& k, const TensorView& v,
                               const TensorView& d_o, const TensorView& lse,
                               const TensorView& delta, const TensorView& dq, const TensorView& dk,
                               const TensorView& dv) {
  MESHPLAN_RETURN_IF_ERROR(Use(rank));
  Status refusal;
  if (CudnnAttention* c = CudnnFor(rank, p, q, k, true, refusal)) {
    Status run = c->Backward(p, q, k, v, d_o, lse, delta, dq, dk, dv, At(rank).Stream(stream));
    if (!run.ok()) return Status::Internal("rank " + std::to_string(rank) + ": " + run.message());
    return Status::Ok();
  }
  MESHPLAN_RETURN_IF_ERROR(refusal);
  MESHPLAN_CUDA_CHECK(rank, LaunchBlockBackward(p, q, k, v, d_o, lse, delta, dq, dk, dv,
                                                config_.path, At(rank).Stream(stream)));
  return Status::Ok();
}

Status CudaDeviceOps::MergePartial(int32_t rank, StreamId stream, float* o, float* lse,
                                   const float* o_in, const float* lse_in, int64_t count,
                                   int32_t dim) {
  MESHPLAN_RETURN_IF_ERROR(Use(rank));
  MESHPLAN_CUDA_CHECK(
      rank, LaunchMergePartial(o, lse, o_in, lse_in, count, dim, At(rank).Stream(stream)));
  return Status::Ok();
}

Status CudaDeviceOps::AddInto(int32_t rank, StreamId stream, float* acc, const float* in,
                              int64_t n) {
  MESHPLAN_RETURN_IF_ERROR(Use(rank));
  MESHPLAN_CUDA_CHECK(rank, LaunchAddInto(acc, in, n, At(rank).Stream(stream)));
  return Status::Ok();
}

Status CudaDeviceOps::Delta(int32_t rank, StreamId stream, InputType type, const float* o,
                            const void* d_o, float* delta, int64_t batch, int64_t rows,
                            int32_t heads, int32_t dim) {
  if (type == InputType::kFp32)
    return Status::Invalid("the CUDA kernels take bf16 or fp16 inputs, not fp32");
  MESHPLAN_RETURN_IF_ERROR(Use(rank));
  MESHPLAN_CUDA_CHECK(
      rank, LaunchDelta(type, o, d_o, delta, batch, rows, heads, dim, At(rank).Stream(stream)));
  return Status::Ok();
}

Status CudaDeviceOps::Fill(int32_t rank, StreamId stream, float* data, float value, int64_t n) {
  MESHPLAN_RETURN_IF_ERROR(Use(rank));
  MESHPLAN_CUDA_CHECK(rank, LaunchFill(data, value, n, At(rank).Stream(stream)));
  return Status::Ok();
}

Status CudaDeviceOps::RowCopy(int32_t rank, StreamId stream, const exec::RowCopy& copy) {
  MESHPLAN_RETURN_IF_ERROR(Use(rank));
  MESHPLAN_CUDA_CHECK(rank, LaunchRowCopy(copy, At(rank).Stream(stream)));
  return Status::Ok();
}

Status CudaDeviceOps::Exchange(const std::vector<Transfer>& transfers) {
  for (const Transfer& t : transfers) {
    // A device cannot wait for a message with a deadline, so an injected silent peer fails at
    // issue, naming the receiving op as the host backend does at its deadline.
    if (t.silent) {
      return Status::Io("rank " + std::to_string(t.dst_rank) + " op " + std::to_string(t.dst_op) +
                        ": recv from rank " + std::to_string(t.src_rank) +
                        ": nothing will arrive (silent peer injected)");
    }
  }
  if (config_.transfers == TransferKind::kLocalCopies) {
    for (const Transfer& t : transfers) {
      // The destination's stream copies once the source's stream has produced the data; the
      // source's stream then waits for the copy, so its op ends after it (and may free).
      RankDevice& src = At(t.src_rank);
      RankDevice& dst = At(t.dst_rank);
      cudaEvent_t ready = nullptr, done = nullptr;
      MESHPLAN_RETURN_IF_ERROR(Use(t.src_rank));
      MESHPLAN_CUDA_CHECK(t.src_rank, cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
      MESHPLAN_CUDA_CHECK(t.src_rank, cudaEventRecord(ready, src.Stream(t.src_stream)));
      MESHPLAN_RETURN_IF_ERROR(Use(t.dst_rank));
      const cudaStream_t s = dst.Stream(t.dst_stream);
      MESHPLAN_CUDA_CHECK(t.dst_rank, cudaStreamWaitEvent(s, ready, 0));
      if (t.bytes > 0) {
        if (src.device == dst.device) {
          MESHPLAN_CUDA_CHECK(t.dst_rank,
                              cudaMemcpyAsync(t.dst, t.src, static_cast<size_t>(t.bytes),
                                              cudaMemcpyDeviceToDevice, s));
        } else {
          MESHPLAN_CUDA_CHECK(t.dst_rank, cudaMemcpyPeerAsync(t.dst, dst.device, t.src, src.device,
                                                              static_cast<size_t>(t.bytes), s));
        }
      }
      MESHPLAN_CUDA_CHECK(t.dst_rank, cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
      MESHPLAN_CUDA_CHECK(t.dst_rank, cudaEventRecord(done, s));
      MESHPLAN_RETURN_IF_ERROR(Use(t.src_rank));
      MESHPLAN_CUDA_CHECK(t.src_rank, cudaStreamWaitEvent(src.Stream(t.src_stream), done, 0));
      // Destroying a recorded event is safe: its resources go once the work completes.
      cudaEventDestroy(ready);
      cudaEventDestroy(done);
    }
    return Status::Ok();
  }
#if MESHPLAN_HAVE_NCCL
  // One group for the whole step: NCCL matches each send with its receive inside it, and ranks
  // of other processes post the same step as their own group.
  const NcclLibrary& nccl = *config_.nccl;
  MESHPLAN_RETURN_IF_ERROR(
      NcclStatus(nccl, nccl.GroupStart(), -1, "ncclGroupStart", __FILE__, __LINE__));
  Status posted;
  for (const Transfer& t : transfers) {
    if (t.src != nullptr) {
      posted = Use(t.src_rank);
      if (!posted.ok()) break;
      posted = NcclStatus(nccl,
                          nccl.Send(t.src, static_cast<size_t>(t.bytes), ncclUint8, t.dst_rank,
                                    static_cast<ncclComm_t>(At(t.src_rank).comm),
                                    At(t.src_rank).Stream(t.src_stream)),
                          t.src_rank, "ncclSend", __FILE__, __LINE__);
      if (!posted.ok()) break;
    }
    if (t.dst != nullptr) {
      posted = Use(t.dst_rank);
      if (!posted.ok()) break;
      posted = NcclStatus(nccl,
                          nccl.Recv(t.dst, static_cast<size_t>(t.bytes), ncclUint8, t.src_rank,
                                    static_cast<ncclComm_t>(At(t.dst_rank).comm),
                                    At(t.dst_rank).Stream(t.dst_stream)),
                          t.dst_rank, "ncclRecv", __FILE__, __LINE__);
      if (!posted.ok()) break;
    }
  }
  const ncclResult_t ended = nccl.GroupEnd();
  MESHPLAN_RETURN_IF_ERROR(posted);
  MESHPLAN_RETURN_IF_ERROR(NcclStatus(nccl, ended, -1, "ncclGroupEnd", __FILE__, __LINE__));
  return Status::Ok();
#else
  return Status::Internal("NCCL transfers requested in a binary built without NCCL");
#endif
}

void CudaDeviceOps::AbortCommunicators() {
#if MESHPLAN_HAVE_NCCL
  for (auto& d : ranks_) {
    if (d == nullptr || d->comm == nullptr) continue;
    cudaSetDevice(d->device);
    config_.nccl->CommAbort(static_cast<ncclComm_t>(d->comm));
    d->comm = nullptr;
  }
#endif
}

void CudaDeviceOps::Abort(const Status&) {
  AbortCommunicators();
  (void)Finish(10.0, nullptr);
}

Status CudaDeviceOps::Finish(double timeout_s, std::vector<std::vector<OpTiming>>* times) {
  finished_ = true;
  // The deadline is for progress, as the CPU executor's receive timeout: it moves whenever another
  // op of some rank has completed (a cursor per rank over its ops' end events).
  const auto window = std::chrono::duration<double>(timeout_s);
  auto deadline = std::chrono::steady_clock::now() + window;
  std::vector<size_t> cursor(ranks_.size(), 0);
  while (true) {
    bool busy = false;
    std::string where;
    for (size_t r = 0; r < ranks_.size(); ++r) {
      RankDevice* d = ranks_[r].get();
      if (d == nullptr) continue;
      const int32_t rank = static_cast<int32_t>(r);
      cudaSetDevice(d->device);
      const size_t before = cursor[r];
      while (cursor[r] < d->end.size() &&
             (d->end[cursor[r]] == nullptr || cudaEventQuery(d->end[cursor[r]]) == cudaSuccess)) {
        ++cursor[r];
      }
      if (cursor[r] != before) deadline = std::chrono::steady_clock::now() + window;
      for (int s = 0; s < kScheduleStreams; ++s) {
        const cudaError_t q = cudaStreamQuery(d->streams[s]);
        if (q == cudaErrorNotReady) {
          if (!busy)
            where = "rank " + std::to_string(r) + " " + kStreamNames[s] + " stream, op " +
                    std::to_string(cursor[r]);
          busy = true;
        } else if (q != cudaSuccess) {
          AbortCommunicators();
          return CudaStatus(q, rank,
                            (std::string("work on the ") + kStreamNames[s] + " stream").c_str(),
                            __FILE__, __LINE__);
        }
      }
#if MESHPLAN_HAVE_NCCL
      if (d->comm != nullptr) {
        ncclResult_t async = ncclSuccess;
        config_.nccl->CommGetAsyncError(static_cast<ncclComm_t>(d->comm), &async);
        if (async != ncclSuccess && async != ncclInProgress) {
          const std::string why = config_.nccl->GetErrorString(async);
          AbortCommunicators();
          return Status::Internal("rank " + std::to_string(r) + ": NCCL failed asynchronously: " +
                                  why + " (communicators aborted)");
        }
      }
#endif
    }
    if (!busy) break;
    if (std::chrono::steady_clock::now() > deadline) {
      AbortCommunicators();
      char limit[32];
      std::snprintf(limit, sizeof limit, "%g", timeout_s);
      return Status::Internal("no device progress for " + std::string(limit) + " s (" + where +
                              " still busy); NCCL communicators aborted");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  if (times == nullptr) return Status::Ok();
  times->assign(ranks_.size(), {});
  for (size_t r = 0; r < ranks_.size(); ++r) {
    RankDevice* d = ranks_[r].get();
    if (d == nullptr) continue;
    const int32_t rank = static_cast<int32_t>(r);
    MESHPLAN_RETURN_IF_ERROR(Use(rank));
    auto& out = (*times)[r];
    out.assign(d->start.size(), {});
    for (size_t i = 0; i < d->start.size(); ++i) {
      if (d->start[i] == nullptr || d->end[i] == nullptr) continue;
      float start_ms = 0, end_ms = 0;
      MESHPLAN_CUDA_CHECK(rank, cudaEventElapsedTime(&start_ms, d->origin, d->start[i]));
      MESHPLAN_CUDA_CHECK(rank, cudaEventElapsedTime(&end_ms, d->origin, d->end[i]));
      out[i].start_s = std::max(0.0f, start_ms) * 1e-3;
      out[i].end_s = std::max(start_ms, end_ms) * 1e-3;
    }
  }
  return Status::Ok();
}

}  // namespace meshplan::exec::cuda
