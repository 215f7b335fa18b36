#include "executor/device/host_device_ops.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "executor/device/host_kernels.h"

namespace meshplan::exec {

namespace {

constexpr int kStreams = 4;
constexpr auto kNoDeadline = std::chrono::steady_clock::time_point::max();

// The transport tag of a transfer: its two ops identify it (a pair of ops moves its tensors in
// one fixed order, and per (peer, tag) messages arrive in order). Below 2^50, where the tags of
// gather (executor/gather.h) begin.
constexpr uint32_t kMaxTaggedOps = uint32_t{1} << 25;
int64_t TransferTag(const Transfer& t) { return (static_cast<int64_t>(t.src_op) << 25) | t.dst_op; }

// A receive that ended at its deadline (not one aborted because another rank failed).
bool TimedOut(const Status& received) {
  return !received.ok() &&
         received.message().find("no message within the deadline") != std::string::npos &&
         received.message().find("aborted") == std::string::npos;
}

}  // namespace

struct HostDeviceOps::Worker {
  int32_t rank = 0;
  StreamId stream = StreamId::kCompute;
  std::deque<Task> queue;
  std::condition_variable cv;  // queued work or stopping
  std::thread thread;
};

// One local-to-local transfer: the source stream reached it (ready), the copy is done (copied).
struct HostDeviceOps::Rendezvous {
  bool ready = false;
  bool copied = false;
};

HostDeviceOps::HostDeviceOps(const Workload& workload, HostOpsConfig config)
    : mask_(workload.mask), config_(config) {}

HostDeviceOps::~HostDeviceOps() {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    if (failure_.ok() && busy_ > 0)
      Fail(Status::Internal("host device destroyed while work was queued"));
    stopping_ = true;
  }
  NotifyEveryone();
  for (auto& w : workers_) {
    if (w && w->thread.joinable()) w->thread.join();
  }
}

std::string HostDeviceOps::OpName(int32_t rank, uint32_t index) const {
  const Op& op = schedule_->ranks[rank].ops[index];
  return "rank " + std::to_string(rank) + " op " + std::to_string(index) + " (" +
         std::string(op.phase == Phase::kForward ? "fwd " : "bwd ") +
         std::string(OpKindName(op.kind)) + ")";
}

double HostDeviceOps::Now() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

Status HostDeviceOps::Prepare(const Schedule& schedule, const std::vector<uint8_t>& local) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!workers_.empty()) return Status::Internal("host device prepared twice");
  schedule_ = &schedule;
  const size_t n = static_cast<size_t>(schedule.num_ranks);
  local_ = local;
  memory_.resize(n);
  sizes_.assign(n, {});
  live_.assign(n, 0);
  peak_.assign(n, 0);
  times_.assign(n, {});
  ended_.assign(n, {});
  frees_after_.assign(n, {});
  workers_.resize(n * kStreams);
  for (size_t r = 0; r < n; ++r) {
    if (!local_[r]) continue;
    times_[r].assign(schedule.ranks[r].ops.size(), {});
    ended_[r].assign(schedule.ranks[r].ops.size(), 0);
    frees_after_[r].resize(schedule.ranks[r].ops.size());
    for (int s = 0; s < kStreams; ++s) {
      auto w = std::make_unique<Worker>();
      w->rank = static_cast<int32_t>(r);
      w->stream = static_cast<StreamId>(s);
      Worker* raw = w.get();
      w->thread = std::thread([this, raw] { WorkerLoop(raw); });
      workers_[r * kStreams + s] = std::move(w);
    }
  }
  start_ = std::chrono::steady_clock::now();
  return Status::Ok();
}

void HostDeviceOps::NotifyEveryone() {
  for (auto& w : workers_) {
    if (w) w->cv.notify_all();
  }
  state_cv_.notify_all();
  done_cv_.notify_all();
}

void HostDeviceOps::WorkerLoop(Worker* w) {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    w->cv.wait(lock, [&] { return stopping_ || !w->queue.empty(); });
    if (w->queue.empty()) return;  // stopping
    Task task = std::move(w->queue.front());
    w->queue.pop_front();
    if (failure_.ok()) {  // after a failure, queued work is dropped
      ++running_;
      lock.unlock();
      Status st = task();
      lock.lock();
      --running_;
      ++completed_;
      if (!st.ok()) Fail(st);
    }
    --busy_;
    done_cv_.notify_all();
  }
}

void HostDeviceOps::Enqueue(int32_t rank, StreamId stream, Task task) {
  Worker* w = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!failure_.ok()) return;
    w = workers_[static_cast<size_t>(rank) * kStreams + static_cast<int>(stream)].get();
    w->queue.push_back(std::move(task));
    ++busy_;
  }
  w->cv.notify_one();  // the worker outlives every Enqueue (joined in the destructor)
}

Status HostDeviceOps::WaitUntil(std::unique_lock<std::mutex>& lock,
                                const std::function<bool()>& ready,
                                std::chrono::steady_clock::time_point deadline,
                                const std::string& what) {
  ++waiting_;
  const bool ok = state_cv_.wait_until(lock, deadline, [&] { return !failure_.ok() || ready(); });
  --waiting_;
  if (!failure_.ok()) return Status::Io(what + ": aborted: " + failure_.message());
  if (!ok) return Status::Io(what);
  return Status::Ok();
}

std::string HostDeviceOps::RootWait(int32_t src) const {
  for (const WaitingRecv& w : waiting_recvs_) {
    if (w.silent) return w.what;
  }
  std::string root;
  // At most one hop per rank: a cycle of waits ends the walk where it began.
  for (size_t hops = 0; hops <= ended_.size(); ++hops) {
    const auto next = std::find_if(waiting_recvs_.begin(), waiting_recvs_.end(),
                                   [&](const WaitingRecv& w) { return w.dst_rank == src; });
    if (next == waiting_recvs_.end()) break;
    root = next->what;
    src = next->src_rank;
  }
  return root;
}

void HostDeviceOps::Fail(const Status& status) {
  if (!failure_.ok()) return;
  failure_ = status;
  NotifyEveryone();
  // Peers in other processes stop too instead of waiting for this one.
  if (config_.transport != nullptr) config_.transport->Abort(status);
}

void HostDeviceOps::Abort(const Status& why) {
  std::unique_lock<std::mutex> lock(mutex_);
  Fail(why);
  done_cv_.wait(lock, [&] { return busy_ == 0; });  // running tasks end: every wait ends on failure
}

void HostDeviceOps::Release(const PendingFree& f) {
  // Wait for one use that has not ended; when it ends, this is tried again (at most once per
  // stream), so each op's end looks only at the frees that wait for it.
  for (int64_t op : f.uses) {
    if (op >= 0 && !ended_[f.rank][static_cast<size_t>(op)]) {
      frees_after_[f.rank][static_cast<size_t>(op)].push_back(f);
      return;
    }
  }
  live_[f.rank] -= sizes_[f.rank][f.ptr];
  sizes_[f.rank].erase(f.ptr);
  memory_[f.rank].erase(f.ptr);
}

Status HostDeviceOps::CheckPointer(int32_t rank, const void* ptr) const {
  if (rank < 0 || static_cast<size_t>(rank) >= local_.size() || !local_[rank]) {
    return Status::Internal("rank " + std::to_string(rank) + " is not run by this process");
  }
  if (ptr != nullptr && memory_[rank].count(ptr) == 0) {
    return Status::Internal("rank " + std::to_string(rank) +
                            ": pointer not allocated on this rank");
  }
  return Status::Ok();
}

Result<void*> HostDeviceOps::Allocate(int32_t rank, int64_t bytes, StreamId) {
  std::lock_guard<std::mutex> lock(mutex_);
  MESHPLAN_RETURN_IF_ERROR(CheckPointer(rank, nullptr));
  std::unique_ptr<char[]> block(
      new (std::nothrow) char[static_cast<size_t>(std::max<int64_t>(bytes, 1))]);
  if (block == nullptr) {
    return Status::OutOfMemory("rank " + std::to_string(rank) + ": could not allocate " +
                               std::to_string(bytes) + " bytes of host memory");
  }
  void* ptr = block.get();
  memory_[rank][ptr] = std::move(block);
  sizes_[rank][ptr] = bytes;
  live_[rank] += bytes;
  peak_[rank] = std::max(peak_[rank], live_[rank]);
  return ptr;
}

Status HostDeviceOps::Free(int32_t rank, void* ptr, const StreamUses& uses) {
  std::lock_guard<std::mutex> lock(mutex_);
  MESHPLAN_RETURN_IF_ERROR(CheckPointer(rank, ptr));
  Release({rank, ptr, uses});
  return Status::Ok();
}

Result<void*> HostDeviceOps::Upload(int32_t rank, const void* host, int64_t bytes) {
  MESHPLAN_ASSIGN_OR_RETURN(auto ptr, Allocate(rank, bytes, StreamId::kCompute));
  if (bytes > 0) std::memcpy(ptr, host, static_cast<size_t>(bytes));
  return ptr;
}

Status HostDeviceOps::Download(int32_t rank, void* host, const void* device, int64_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    MESHPLAN_RETURN_IF_ERROR(CheckPointer(rank, device));
  }
  if (bytes > 0) std::memcpy(host, device, static_cast<size_t>(bytes));
  return Status::Ok();
}

Status HostDeviceOps::Start() {
  std::lock_guard<std::mutex> lock(mutex_);
  start_ = std::chrono::steady_clock::now();
  return Status::Ok();
}

Status HostDeviceOps::BeginOp(int32_t rank, uint32_t op, StreamId stream,
                              const std::vector<uint32_t>& deps) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    MESHPLAN_RETURN_IF_ERROR(CheckPointer(rank, nullptr));
  }
  Enqueue(rank, stream, [this, rank, op, deps]() -> Status {
    std::unique_lock<std::mutex> lock(mutex_);
    MESHPLAN_RETURN_IF_ERROR(WaitUntil(
        lock,
        [&] {
          for (uint32_t d : deps) {
            if (!ended_[rank][d]) return false;
          }
          return true;
        },
        kNoDeadline, OpName(rank, op) + ": waiting for its dependencies"));
    times_[rank][op].start_s = Now();
    return Status::Ok();
  });
  return Status::Ok();
}

Status HostDeviceOps::EndOp(int32_t rank, uint32_t op, StreamId stream) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    MESHPLAN_RETURN_IF_ERROR(CheckPointer(rank, nullptr));
  }
  Enqueue(rank, stream, [this, rank, op]() -> Status {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      times_[rank][op].end_s = Now();
      ended_[rank][op] = 1;
      std::vector<PendingFree> waiting;
      waiting.swap(frees_after_[rank][op]);
      for (const PendingFree& f : waiting) Release(f);
    }
    state_cv_.notify_all();
    return Status::Ok();
  });
  return Status::Ok();
}

Status HostDeviceOps::Forward(int32_t rank, StreamId stream, const BlockProblem& p,
                              const TensorView& q, const TensorView& k, const TensorView& v,
                              const TensorView& o, const TensorView& lse) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const TensorView* t : {&q, &k, &v, &o, &lse})
      MESHPLAN_RETURN_IF_ERROR(CheckPointer(rank, t->data));
  }
  Enqueue(rank, stream, [this, p, q, k, v, o, lse] {
    HostBlockForward(p, mask_, q, k, v, o, lse);
    return Status::Ok();
  });
  return Status::Ok();
}

Status HostDeviceOps::Backward(int32_t rank, StreamId stream, const BlockProblem& p,
                               const TensorView& q, const TensorView& k, const TensorView& v,
                               const TensorView& d_o, const TensorView& lse,
                               const TensorView& delta, const TensorView& dq, const TensorView& dk,
                               const TensorView& dv) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const TensorView* t : {&q, &k, &v, &d_o, &lse, &delta, &dq, &dk, &dv}) {
      MESHPLAN_RETURN_IF_ERROR(CheckPointer(rank, t->data));
    }
  }
  Enqueue(rank, stream, [this, p, q, k, v, d_o, lse, delta, dq, dk, dv] {
    HostBlockBackward(p, mask_, q, k, v, d_o, lse, delta, dq, dk, dv);
    return Status::Ok();
  });
  return Status::Ok();
}

Status HostDeviceOps::MergePartial(int32_t rank, StreamId stream, float* o, float* lse,
                                   const float* o_in, const float* lse_in, int64_t count,
                                   int32_t dim) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const void* ptr : {static_cast<const void*>(o), static_cast<const void*>(lse),
                            static_cast<const void*>(o_in), static_cast<const void*>(lse_in)}) {
      MESHPLAN_RETURN_IF_ERROR(CheckPointer(rank, ptr));
    }
  }
  Enqueue(rank, stream, [=] {
    HostMergePartial(o, lse, o_in, lse_in, count, dim);
    return Status::Ok();
  });
  return Status::Ok();
}

Status HostDeviceOps::AddInto(int32_t rank, StreamId stream, float* acc, const float* in,
                              int64_t n) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    MESHPLAN_RETURN_IF_ERROR(CheckPointer(rank, acc));
    MESHPLAN_RETURN_IF_ERROR(CheckPointer(rank, in));
  }
  Enqueue(rank, stream, [=] {
    HostAddInto(acc, in, n);
    return Status::Ok();
  });
  return Status::Ok();
}

Status HostDeviceOps::Delta(int32_t rank, StreamId stream, InputType type, const float* o,
                            const void* d_o, float* delta, int64_t batch, int64_t rows,
                            int32_t heads, int32_t dim) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    MESHPLAN_RETURN_IF_ERROR(CheckPointer(rank, o));
    MESHPLAN_RETURN_IF_ERROR(CheckPointer(rank, d_o));
    MESHPLAN_RETURN_IF_ERROR(CheckPointer(rank, delta));
  }
  Enqueue(rank, stream, [=] {
    HostDelta(type, o, d_o, delta, batch, rows, heads, dim);
    return Status::Ok();
  });
  return Status::Ok();
}

Status HostDeviceOps::Fill(int32_t rank, StreamId stream, float* data, float value, int64_t n) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    MESHPLAN_RETURN_IF_ERROR(CheckPointer(rank, data));
  }
  Enqueue(rank, stream, [=] {
    HostFill(data, value, n);
    return Status::Ok();
  });
  return Status::Ok();
}

Status HostDeviceOps::RowCopy(int32_t rank, StreamId stream, const exec::RowCopy& copy) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    MESHPLAN_RETURN_IF_ERROR(CheckPointer(rank, copy.src));
    MESHPLAN_RETURN_IF_ERROR(CheckPointer(rank, copy.dst));
  }
  Enqueue(rank, stream, [copy] {
    HostRowCopy(copy);
    return Status::Ok();
  });
  return Status::Ok();
}

Status HostDeviceOps::Exchange(const std::vector<Transfer>& transfers) {
  for (const Transfer& t : transfers) {
    const bool src_here = local_[t.src_rank] != 0, dst_here = local_[t.dst_rank] != 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (src_here) MESHPLAN_RETURN_IF_ERROR(CheckPointer(t.src_rank, t.src));
      if (dst_here) MESHPLAN_RETURN_IF_ERROR(CheckPointer(t.dst_rank, t.dst));
    }
    if ((!src_here || !dst_here) && (t.src_op >= kMaxTaggedOps || t.dst_op >= kMaxTaggedOps)) {
      return Status::Invalid("ranks with more than 2^25 ops cannot exchange over a transport");
    }
    if ((!src_here || !dst_here) && config_.transport == nullptr) {
      return Status::Internal("transfer between rank " + std::to_string(t.src_rank) + " and rank " +
                              std::to_string(t.dst_rank) +
                              " of another process without a transport");
    }
    const std::string recv_what =
        OpName(t.dst_rank, t.dst_op) + ": recv from rank " + std::to_string(t.src_rank);
    const std::chrono::milliseconds timeout = config_.recv_timeout;
    if (src_here && dst_here) {
      // As CUDA device copies: the destination stream copies once the source stream reached the
      // transfer; the source stream waits for the copy (its op may free the source after it).
      auto rv = std::make_shared<Rendezvous>();
      if (!t.silent) {
        Enqueue(t.src_rank, t.src_stream, [this, rv, t]() -> Status {
          std::unique_lock<std::mutex> lock(mutex_);
          rv->ready = true;
          state_cv_.notify_all();
          return WaitUntil(
              lock, [&] { return rv->copied; }, kNoDeadline,
              OpName(t.src_rank, t.src_op) + ": send to rank " + std::to_string(t.dst_rank));
        });
      }
      Enqueue(t.dst_rank, t.dst_stream, [this, rv, t, recv_what, timeout]() -> Status {
        {
          std::unique_lock<std::mutex> lock(mutex_);
          const std::string deadline =
              ": no message within the deadline (" + std::to_string(timeout.count()) + " ms)";
          const auto me = waiting_recvs_.insert(waiting_recvs_.end(),
                                                {t.dst_rank, t.src_rank, recv_what, t.silent});
          Status waited = WaitUntil(
              lock, [&] { return rv->ready; }, std::chrono::steady_clock::now() + timeout,
              recv_what + deadline);
          waiting_recvs_.erase(me);
          if (!waited.ok() && failure_.ok()) {
            // This deadline passed first; if the sender is itself stuck waiting, name the cause.
            const std::string root = RootWait(t.src_rank);
            if (!root.empty())
              waited = Status::Io(root + deadline + " (" + recv_what + " waited on it)");
            if (config_.silent_rank >= 0) {
              waited =
                  Status::Io(waited.message() + " (rank " + std::to_string(config_.silent_rank) +
                             " sends nothing: --inject-silent)");
            }
          }
          MESHPLAN_RETURN_IF_ERROR(waited);
        }
        if (t.bytes > 0) std::memcpy(t.dst, t.src, static_cast<size_t>(t.bytes));
        {
          std::lock_guard<std::mutex> lock(mutex_);
          rv->copied = true;
        }
        state_cv_.notify_all();
        return Status::Ok();
      });
    } else if (src_here) {
      if (t.silent) continue;  // a silent peer drops what it sends
      Enqueue(t.src_rank, t.src_stream, [this, t]() -> Status {
        std::vector<float> payload(static_cast<size_t>((t.bytes + 3) / 4));
        if (t.bytes > 0) std::memcpy(payload.data(), t.src, static_cast<size_t>(t.bytes));
        return config_.transport->Send(t.dst_rank, TransferTag(t), payload)
            .WithContext(OpName(t.src_rank, t.src_op));
      });
    } else {
      Enqueue(t.dst_rank, t.dst_stream, [this, t, timeout]() -> Status {
        std::vector<float> payload;
        {
          std::lock_guard<std::mutex> lock(mutex_);
          ++waiting_;
        }
        Status received =
            config_.transport->Recv(t.src_rank, TransferTag(t), &payload, Clock::now() + timeout);
        if (TimedOut(received) && config_.silent_rank >= 0 && !t.silent) {
          // Stalled by the silent rank through others: its own receiver reports first.
          received =
              config_.transport->Recv(t.src_rank, TransferTag(t), &payload, Clock::now() + timeout);
        }
        if (TimedOut(received) && config_.silent_rank >= 0) {
          received =
              Status::Io(received.message() + " (rank " + std::to_string(config_.silent_rank) +
                         " sends nothing: --inject-silent)");
        }
        {
          std::lock_guard<std::mutex> lock(mutex_);
          --waiting_;
        }
        MESHPLAN_RETURN_IF_ERROR(received.WithContext(OpName(t.dst_rank, t.dst_op)));
        if (static_cast<int64_t>(payload.size()) != (t.bytes + 3) / 4) {
          return Status::Internal(OpName(t.dst_rank, t.dst_op) + ": received " +
                                  std::to_string(payload.size() * 4) + " bytes from rank " +
                                  std::to_string(t.src_rank) + ", expected " +
                                  std::to_string(t.bytes));
        }
        if (t.bytes > 0) std::memcpy(t.dst, payload.data(), static_cast<size_t>(t.bytes));
        return Status::Ok();
      });
    }
  }
  return Status::Ok();
}

Status HostDeviceOps::Finish(double timeout_s, std::vector<std::vector<OpTiming>>* times) {
  std::unique_lock<std::mutex> lock(mutex_);
  // The timeout is for progress, as on CUDA: it restarts whenever a task ends.
  const auto window = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(timeout_s));
  while (busy_ > 0 && failure_.ok()) {
    const int64_t before = completed_;
    if (!done_cv_.wait_for(lock, window, [&] { return completed_ != before || !failure_.ok(); }) &&
        !Computing()) {
      char limit[32];
      std::snprintf(limit, sizeof limit, "%g", timeout_s);
      Fail(Status::Internal("no progress on the host streams for " + std::string(limit) + " s (" +
                            std::to_string(busy_) + " tasks still queued or running)"));
    }
  }
  done_cv_.wait(lock, [&] { return busy_ == 0; });
  if (!failure_.ok()) return failure_;
  if (times != nullptr) *times = times_;
  return Status::Ok();
}

bool HostDeviceOps::Computing() const {
  // A worker that runs a task without waiting in it (a kernel or a copy) is making progress,
  // however long it takes; only workers that all wait (for deps, peers, messages) can be stuck.
  return running_ > waiting_;
}

int64_t HostDeviceOps::live_bytes(int32_t rank) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return live_[rank];
}

int64_t HostDeviceOps::peak_bytes(int32_t rank) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return peak_[rank];
}

}  // namespace meshplan::exec
