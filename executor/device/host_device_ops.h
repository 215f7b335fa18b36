// DeviceOps emulated on the host: memory is host memory, every kernel and transfer runs the moment
// it is enqueued (the launch order issues an op only after everything it waits for, so running at
// issue time is a valid execution), and op times are host wall-clock times. Tests use it to run
// the device engine on machines without a GPU.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <tuple>
#include <map>
#include <memory>
#include <vector>

#include "core/workload.h"
#include "executor/block_kernels.h"
#include "executor/device/device_ops.h"

namespace meshplan::exec {

// Carries transfers between HostDeviceOps of different engines (one per emulated process, each
// on its own thread), as NCCL carries them between processes: the sending side posts, the
// receiving side waits for the post. Both sides enumerate a step's transfers in the same order.
class HostMailbox {
 public:
  void Post(const Transfer& t, const void* data);
  // Fails when nothing arrives within `timeout`.
  Status Take(const Transfer& t, void* data, std::chrono::milliseconds timeout);

 private:
  using Key = std::tuple<int32_t, int32_t, uint32_t, uint32_t>;  // src, dst, src op, dst op
  std::mutex mutex_;
  std::condition_variable cv_;
  std::map<Key, std::deque<std::vector<char>>> messages_;
};

class HostDeviceOps : public DeviceOps {
 public:
  explicit HostDeviceOps(const Workload& workload, std::shared_ptr<HostMailbox> mailbox = nullptr)
      : mask_(workload.mask), mailbox_(std::move(mailbox)) {}

  std::string Describe() const override { return "host emulation"; }
  Status Prepare(const Schedule& schedule, const std::vector<uint8_t>& local) override;
  Result<void*> Allocate(int32_t rank, int64_t bytes, StreamId stream) override;
  Status Free(int32_t rank, void* ptr, const StreamUses& uses) override;
  Result<void*> Upload(int32_t rank, const void* host, int64_t bytes) override;
  Status Download(int32_t rank, void* host, const void* device, int64_t bytes) override;
  Status Start() override;
  Status BeginOp(int32_t rank, uint32_t op, StreamId stream, const std::vector<uint32_t>& deps) override;
  Status EndOp(int32_t rank, uint32_t op, StreamId stream) override;
  Status Forward(int32_t rank, StreamId stream, const BlockProblem& p, const TensorView& q, const TensorView& k,
                 const TensorView& v, const TensorView& o, const TensorView& lse) override;
  Status Backward(int32_t rank, StreamId stream, const BlockProblem& p, const TensorView& q, const TensorView& k,
                  const TensorView& v, const TensorView& d_o, const TensorView& lse, const TensorView& delta,
                  const TensorView& dq, const TensorView& dk, const TensorView& dv) override;
  Status MergePartial(int32_t rank, StreamId stream, float* o, float* lse, const float* o_in, const float* lse_in,
                      int64_t count, int32_t dim) override;
  Status AddInto(int32_t rank, StreamId stream, float* acc, const float* in, int64_t n) override;
  Status Delta(int32_t rank, StreamId stream, InputType type, const float* o, const void* d_o, float* delta,
               int64_t batch, int64_t rows, int32_t heads, int32_t dim) override;
  Status Fill(int32_t rank, StreamId stream, float* data, float value, int64_t n) override;
  Status RowCopy(int32_t rank, StreamId stream, const exec::RowCopy& copy) override;
  Status Exchange(const std::vector<Transfer>& transfers) override;
  Status Finish(double timeout_s, std::vector<std::vector<OpTimes>>* times) override;

  // Bytes currently allocated and the most ever allocated at once, per rank (tests check that
  // buffers are released during the run).
  int64_t live_bytes(int32_t rank) const { return live_[rank]; }
  int64_t peak_bytes(int32_t rank) const { return peak_[rank]; }

 private:
  Status CheckPointer(int32_t rank, const void* ptr) const;

  MaskRule mask_;
  std::shared_ptr<HostMailbox> mailbox_;
  std::vector<uint8_t> local_;
  std::vector<std::map<const void*, std::unique_ptr<char[]>>> memory_;
  std::vector<std::map<const void*, int64_t>> sizes_;
  std::vector<int64_t> live_, peak_;
  std::vector<std::vector<OpTimes>> times_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace meshplan::exec
