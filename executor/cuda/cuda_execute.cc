#include "executor/cuda/cuda_execute.h"

#include <chrono>
#include <cstdlib>
#include <cstring>

#if MESHPLAN_HAVE_NCCL
#include <cuda_runtime_api.h>

#include "executor/cuda/nccl_library.h"
#endif

#include "executor/device/device_engine.h"
#include "executor/execute.h"
#include "executor/gather.h"

namespace meshplan::exec::cuda {
namespace {

// The session's cuDNN objects (made on its first CUDA run), or null without a session: the run
// then makes its own.
std::shared_ptr<CudnnDevices> SessionCudnn(const ExecuteConfig& config) {
  if (!config.session) return nullptr;
  if (!config.session->cuda) config.session->cuda = std::make_shared<CudnnDevices>();
  return std::static_pointer_cast<CudnnDevices>(config.session->cuda);
}

Status CheckType(const ExecuteConfig& config) {
  if (config.run.type == InputType::kFp32)
    return Status::Invalid("the CUDA kernels take bf16 or fp16 inputs, not fp32");
  return Status::Ok();
}

#if MESHPLAN_HAVE_NCCL
Status Nccl(const NcclLibrary& nccl, ncclResult_t result, const std::string& what) {
  if (result == ncclSuccess) return Status::Ok();
  return Status::Internal(what + " failed: " + nccl.GetErrorString(result));
}
#endif

// This process's GPU in a job with one rank per process: the node-local rank that mpirun sets,
// else the global rank, modulo the visible GPUs.
int ProcessDevice(int rank, int count) {
  for (const char* name :
       {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID", "LOCAL_RANK"}) {
    if (const char* value = std::getenv(name)) return std::atoi(value) % count;
  }
  return rank % count;
}

}  // namespace

Status NcclAvailable(const ExecuteConfig& config) {
  if (config.backend != Backend::kCuda || config.transport != TransportKind::kNccl)
    return Status::Ok();
#if MESHPLAN_HAVE_NCCL
  // Loaded only to see that it loads; the run loads it again (dlopen counts references).
  auto nccl = LoadNccl();
  return nccl.ok() ? Status::Ok() : nccl.status();
#else
  return Status::Invalid(
      "NCCL transfers: this binary was built without NCCL (nccl.h was not found)");
#endif
}

Result<ExecutionResult> ExecuteOnCuda(const Schedule& schedule, const Workload& workload,
                                      const InputSource& inputs, const ExecuteConfig& config) {
  MESHPLAN_RETURN_IF_ERROR(CheckType(config));
  MESHPLAN_ASSIGN_OR_RETURN(auto count, CudaDeviceCount());
  const int ranks = static_cast<int>(schedule.num_ranks);
  CudaOpsConfig ops_config;
  ops_config.path = config.run.path;
  ops_config.transfers =
      config.transport == TransportKind::kNccl ? TransferKind::kNccl : TransferKind::kLocalCopies;
  ops_config.poison_allocations = config.poison;
  ops_config.cudnn = SessionCudnn(config);
  if (config.transport == TransportKind::kNccl) {
#if MESHPLAN_HAVE_NCCL
    if (ranks > count) {
      return Status::Invalid("--transport nccl runs one rank per GPU: the plan has " +
                             std::to_string(ranks) + " ranks but " + std::to_string(count) +
                             " GPUs are visible (use --transport local for virtual ranks)");
    }
    std::vector<int> devices(ranks);
    for (int r = 0; r < ranks; ++r) devices[r] = r;
    auto nccl = LoadNccl();
    if (!nccl.ok()) return nccl.status();
    std::vector<ncclComm_t> comms(ranks, nullptr);
    MESHPLAN_RETURN_IF_ERROR(
        Nccl(**nccl, (*nccl)->CommInitAll(comms.data(), ranks, devices.data()), "ncclCommInitAll"));
    ops_config.device_of_rank = devices;
    for (ncclComm_t c : comms) ops_config.nccl_comms.push_back(c);
    ops_config.nccl = *nccl;
#else
    return Status::Invalid("--transport nccl: this binary was built without NCCL");
#endif
  } else {
    const int devices = config.devices <= 0 ? count : config.devices;
    if (devices > count) {
      return Status::Invalid("--devices " + std::to_string(devices) + ": only " +
                             std::to_string(count) + " GPUs are visible");
    }
    for (int r = 0; r < ranks; ++r) ops_config.device_of_rank.push_back(r % devices);
  }
  CudaDeviceOps ops(std::move(ops_config));
  ExecutionResult result;
  if (config.keep_outputs) result.outputs = OutputTensors(workload);
  std::vector<uint8_t> covered(CoverageSize(workload), 0);
  if (config.on_start) config.on_start();
  const auto start = std::chrono::steady_clock::now();
  auto run = RunEngine(schedule, workload, inputs, config.run, ops, std::vector<uint8_t>(ranks, 1),
                       config.keep_outputs ? &result.outputs : nullptr, &covered);
  if (!run.ok()) return run.status();
  result.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.device = ops.Describe();
  result.peak_bytes = std::move(run->peak_bytes);
  result.timings = std::move(run->times);
  if (config.check_coverage) MESHPLAN_RETURN_IF_ERROR(CheckCoverage(workload, covered));
  return result;
}

Status ExecuteRankOnCuda(const Schedule& schedule, const Workload& workload,
                         const InputSource& inputs, const ExecuteConfig& config,
                         Transport& transport, AttentionTensors<float>* outputs,
                         std::vector<uint8_t>* covered, std::vector<OpTiming>* timings,
                         std::string* device) {
  MESHPLAN_RETURN_IF_ERROR(CheckType(config));
#if MESHPLAN_HAVE_NCCL
  auto nccl = LoadNccl();
  if (!nccl.ok()) return nccl.status();
  MESHPLAN_ASSIGN_OR_RETURN(auto count, CudaDeviceCount());
  const int rank = transport.rank(), ranks = transport.size();
  // The unique id travels as 32 floats holding its 128 bytes.
  ncclUniqueId id;
  static_assert(sizeof(id) % sizeof(float) == 0);
  std::vector<float> payload(sizeof(id) / sizeof(float));
  const int64_t tag = int64_t{1} << 52;  // above every schedule and gather tag
  if (rank == 0) {
    MESHPLAN_RETURN_IF_ERROR(Nccl(**nccl, (*nccl)->GetUniqueId(&id), "ncclGetUniqueId"));
    std::memcpy(payload.data(), &id, sizeof(id));
    for (int r = 1; r < ranks; ++r) MESHPLAN_RETURN_IF_ERROR(transport.Send(r, tag, payload));
  } else {
    const auto deadline = Clock::now() + config.run.recv_timeout;
    MESHPLAN_RETURN_IF_ERROR(transport.Recv(0, tag, &payload, deadline));
    if (payload.size() * sizeof(float) != sizeof(id))
      return Status::Internal("malformed NCCL unique id");
    std::memcpy(&id, payload.data(), sizeof(id));
  }
  const int gpu = ProcessDevice(rank, count);
  if (cudaSetDevice(gpu) != cudaSuccess)
    return Status::Internal("rank " + std::to_string(rank) + ": cudaSetDevice failed");
  ncclComm_t comm = nullptr;
  MESHPLAN_RETURN_IF_ERROR(Nccl(**nccl, (*nccl)->CommInitRank(&comm, ranks, id, rank),
                                "rank " + std::to_string(rank) + ": ncclCommInitRank"));
  CudaOpsConfig ops_config;
  ops_config.path = config.run.path;
  ops_config.poison_allocations = config.poison;
  ops_config.cudnn = SessionCudnn(config);
  ops_config.transfers = TransferKind::kNccl;
  ops_config.device_of_rank.assign(ranks, 0);
  ops_config.device_of_rank[rank] = gpu;
  ops_config.nccl_comms.assign(ranks, nullptr);
  ops_config.nccl_comms[rank] = comm;
  ops_config.nccl = *nccl;
  CudaDeviceOps ops(std::move(ops_config));
  std::vector<uint8_t> local(ranks, 0);
  local[rank] = 1;
  MESHPLAN_ASSIGN_OR_RETURN(
      auto run, RunEngine(schedule, workload, inputs, config.run, ops, local, outputs, covered));
  if (timings != nullptr) *timings = std::move(run.times[rank]);
  if (device != nullptr) *device = ops.Describe();
  return Status::Ok();
#else
  return Status::Invalid("--transport nccl: this binary was built without NCCL");
#endif
}

}  // namespace meshplan::exec::cuda
