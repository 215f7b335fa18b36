#include "executor/device/host_device_ops.h"

#include <cstring>

#include "executor/device/host_kernels.h"

namespace meshplan::exec {

void HostMailbox::Post(const Transfer& t, const void* data) {
  const char* bytes = static_cast<const char*>(data);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    messages_[{t.src_rank, t.dst_rank, t.src_op, t.dst_op}].emplace_back(bytes, bytes + t.bytes);
  }
  cv_.notify_all();
}

Status HostMailbox::Take(const Transfer& t, void* data, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  auto& queue = messages_[{t.src_rank, t.dst_rank, t.src_op, t.dst_op}];
  if (!cv_.wait_for(lock, timeout, [&] { return !queue.empty(); })) {
    return Status::Internal("rank " + std::to_string(t.dst_rank) + " op " + std::to_string(t.dst_op) +
                            ": nothing arrived from rank " + std::to_string(t.src_rank));
  }
  if (static_cast<int64_t>(queue.front().size()) != t.bytes) return Status::Internal("transfer size mismatch");
  std::memcpy(data, queue.front().data(), queue.front().size());
  queue.pop_front();
  return Status::Ok();
}

Status HostDeviceOps::Prepare(const Schedule& schedule, const std::vector<uint8_t>& local) {
  const size_t n = static_cast<size_t>(schedule.num_ranks);
  local_ = local;
  memory_.clear();
  memory_.resize(n);
  sizes_.assign(n, {});
  live_.assign(n, 0);
  peak_.assign(n, 0);
  times_.assign(n, {});
  for (size_t r = 0; r < n; ++r) {
    if (local_[r]) times_[r].assign(schedule.ranks[r].ops.size(), {});
  }
  return Status::Ok();
}

Status HostDeviceOps::CheckPointer(int32_t rank, const void* ptr) const {
  if (rank < 0 || static_cast<size_t>(rank) >= local_.size() || !local_[rank]) {
    return Status::Internal("rank " + std::to_string(rank) + " is not run by this process");
  }
  if (ptr != nullptr && memory_[rank].count(ptr) == 0) {
    return Status::Internal("rank " + std::to_string(rank) + ": pointer not allocated on this rank");
  }
  return Status::Ok();
}

Result<void*> HostDeviceOps::Allocate(int32_t rank, int64_t bytes, StreamId) {
  MESHPLAN_RETURN_IF_ERROR(CheckPointer(rank, nullptr));
  auto block = std::make_unique<char[]>(static_cast<size_t>(std::max<int64_t>(bytes, 1)));
  void* ptr = block.get();
  memory_[rank][ptr] = std::move(block);
  sizes_[rank][ptr] = bytes;
  live_[rank] += bytes;
  peak_[rank] = std::max(peak_[rank], live_[rank]);
  return ptr;
}

Status HostDeviceOps::Free(int32_t rank, void* ptr, const StreamUses&) {
  MESHPLAN_RETURN_IF_ERROR(CheckPointer(rank, ptr));
  live_[rank] -= sizes_[rank][ptr];
  sizes_[rank].erase(ptr);
  memory_[rank].erase(ptr);
  return Status::Ok();
}

Result<void*> HostDeviceOps::Upload(int32_t rank, const void* host, int64_t bytes) {
  auto ptr = Allocate(rank, bytes, StreamId::kCompute);
  if (!ptr.ok()) return ptr.status();
  if (bytes > 0) std::memcpy(*ptr, host, static_cast<size_t>(bytes));
  return *ptr;
}

Status HostDeviceOps::Download(int32_t rank, void* host, const void* device, int64_t bytes) {
  MESHPLAN_RETURN_IF_ERROR(CheckPointer(rank, device));
  if (bytes > 0) std::memcpy(host, device, static_cast<size_t>(bytes));
  return Status::Ok();
}

Status HostDeviceOps::Start() {
  start_ = std::chrono::steady_clock::now();
  return Status::Ok();
}

Status HostDeviceOps::BeginOp(int32_t rank, uint32_t op, StreamId, const std::vector<uint32_t>&) {
  MESHPLAN_RETURN_IF_ERROR(CheckPointer(rank, nullptr));
  times_[rank][op].start_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  return Status::Ok();
}

Status HostDeviceOps::EndOp(int32_t rank, uint32_t op, StreamId) {
  MESHPLAN_RETURN_IF_ERROR(CheckPointer(rank, nullptr));
  times_[rank][op].end_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  return Status::Ok();
}

Status HostDeviceOps::Forward(int32_t rank, StreamId, const BlockProblem& p, const TensorView& q, const TensorView& k,
                              const TensorView& v, const TensorView& o, const TensorView& lse) {
  for (const TensorView* t : {&q, &k, &v, &o, &lse}) MESHPLAN_RETURN_IF_ERROR(CheckPointer(rank, t->data));
  HostBlockForward(p, mask_, q, k, v, o, lse);
  return Status::Ok();
}

Status HostDeviceOps::Backward(int32_t rank, StreamId, const BlockProblem& p, const TensorView& q, const TensorView& k,
                               const TensorView& v, const TensorView& d_o, const TensorView& lse,
                               const TensorView& delta, const TensorView& dq, const TensorView& dk,
                               const TensorView& dv) {
  for (const TensorView* t : {&q, &k, &v, &d_o, &lse, &delta, &dq, &dk, &dv}) {
    MESHPLAN_RETURN_IF_ERROR(CheckPointer(rank, t->data));
  }
  HostBlockBackward(p, mask_, q, k, v, d_o, lse, delta, dq, dk, dv);
  return Status::Ok();
}

Status HostDeviceOps::MergePartial(int32_t rank, StreamId, float* o, float* lse, const float* o_in,
                                   const float* lse_in, int64_t count, int32_t dim) {
  for (const void* ptr : {static_cast<const void*>(o), static_cast<const void*>(lse), static_cast<const void*>(o_in),
                          static_cast<const void*>(lse_in)}) {
    MESHPLAN_RETURN_IF_ERROR(CheckPointer(rank, ptr));
  }
  HostMergePartial(o, lse, o_in, lse_in, count, dim);
  return Status::Ok();
}

Status HostDeviceOps::AddInto(int32_t rank, StreamId, float* acc, const float* in, int64_t n) {
  MESHPLAN_RETURN_IF_ERROR(CheckPointer(rank, acc));
  MESHPLAN_RETURN_IF_ERROR(CheckPointer(rank, in));
  HostAddInto(acc, in, n);
  return Status::Ok();
}

Status HostDeviceOps::Delta(int32_t rank, StreamId, InputType type, const float* o, const void* d_o, float* delta,
                            int64_t batch, int64_t rows, int32_t heads, int32_t dim) {
  MESHPLAN_RETURN_IF_ERROR(CheckPointer(rank, o));
  MESHPLAN_RETURN_IF_ERROR(CheckPointer(rank, d_o));
  MESHPLAN_RETURN_IF_ERROR(CheckPointer(rank, delta));
  HostDelta(type, o, d_o, delta, batch, rows, heads, dim);
  return Status::Ok();
}

Status HostDeviceOps::Fill(int32_t rank, StreamId, float* data, float value, int64_t n) {
  MESHPLAN_RETURN_IF_ERROR(CheckPointer(rank, data));
  HostFill(data, value, n);
  return Status::Ok();
}

Status HostDeviceOps::RowCopy(int32_t rank, StreamId, const exec::RowCopy& copy) {
  MESHPLAN_RETURN_IF_ERROR(CheckPointer(rank, copy.src));
  MESHPLAN_RETURN_IF_ERROR(CheckPointer(rank, copy.dst));
  HostRowCopy(copy);
  return Status::Ok();
}

Status HostDeviceOps::Exchange(const std::vector<Transfer>& transfers) {
  // Sends first, as NCCL posts a whole group before any of it must complete.
  for (const Transfer& t : transfers) {
    const bool src_here = local_[t.src_rank] != 0, dst_here = local_[t.dst_rank] != 0;
    if (src_here) MESHPLAN_RETURN_IF_ERROR(CheckPointer(t.src_rank, t.src));
    if (dst_here) MESHPLAN_RETURN_IF_ERROR(CheckPointer(t.dst_rank, t.dst));
    if (src_here && dst_here) {
      if (t.bytes > 0) std::memcpy(t.dst, t.src, static_cast<size_t>(t.bytes));
    } else if (src_here) {
      if (mailbox_ == nullptr) return Status::Internal("transfer to another process without a mailbox");
      mailbox_->Post(t, t.src);
    }
  }
  for (const Transfer& t : transfers) {
    if (local_[t.dst_rank] && !local_[t.src_rank]) {
      if (mailbox_ == nullptr) return Status::Internal("transfer from another process without a mailbox");
      MESHPLAN_RETURN_IF_ERROR(mailbox_->Take(t, t.dst, std::chrono::milliseconds(20000)));
    }
  }
  return Status::Ok();
}

Status HostDeviceOps::Finish(double, std::vector<std::vector<OpTimes>>* times) {
  if (times != nullptr) *times = times_;
  return Status::Ok();
}

}  // namespace meshplan::exec
