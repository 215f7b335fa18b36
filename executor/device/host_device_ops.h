// DeviceOps on the host: the CPU backend of the one execution engine (device_engine.h).
//
// It behaves like a device, not like an interpreter: every (rank, stream) has a worker thread
// that runs the work enqueued on that stream in order, and nothing runs at issue time. BeginOp
// enqueues a wait for the op's dependencies (events: the ends of earlier ops of the rank), EndOp
// records the op's end; kernels and copies run on the worker of their stream. So compute and
// communication overlap as on a GPU, and a schedule that lacks a dependency between streams
// races here as it would there (the engine's happens-before checker names it; see
// RunOptions::check_dependencies).
//
// Transfers between ranks of this object (one engine for every rank) are copies with the same
// rendezvous as CUDA device copies: the destination stream waits until the source stream reached
// the transfer, copies, and the source stream waits for the copy. Transfers to or from ranks of
// another process (one engine per process: threads joined by a ThreadFabric, or MPI) go through a
// Transport: the source stream sends (buffered), the destination stream receives with the run's
// receive timeout. Memory is host memory, freed when every op that used it has ended.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/workload/workload.h"
#include "executor/device/device_ops.h"
#include "executor/kernels/block_kernels.h"
#include "executor/timing/op_timing.h"
#include "executor/transport/transport.h"

namespace meshplan::exec {

struct HostOpsConfig {
  // Carries transfers to and from ranks this object does not run (null: every rank is local).
  Transport* transport = nullptr;
  // A receive or rendezvous waiting longer than this fails, naming the rank, op and peer.
  std::chrono::milliseconds recv_timeout{30000};
  // Fault injection (RunOptions::silent_rank): the rank that drops what it sends, or -1. A receive
  // from another rank that times out waits one more recv_timeout before failing, so that the
  // receive the silent rank starved, which stalled the others, fails first (one error line,
  // under threads or MPI); every such error names the silent rank.
  int silent_rank = -1;
};

class HostDeviceOps : public DeviceOps {
 public:
  HostDeviceOps(const Workload& workload, HostOpsConfig config = {});
  ~HostDeviceOps() override;  // aborts what is still queued and joins the workers

  std::string Describe() const override { return "host (a worker thread per rank and stream)"; }
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
  void Abort(const Status& why) override;

  // Bytes currently allocated and the most ever allocated at once, per rank (tests check that
  // buffers are released during the run).
  int64_t live_bytes(int32_t rank) const;
  int64_t peak_bytes(int32_t rank) const;

 private:
  using Task = std::function<Status()>;
  struct Worker;
  struct Rendezvous;

  // Queues `task` on (rank, stream); it runs after everything queued there before it.
  void Enqueue(int32_t rank, StreamId stream, Task task);
  void WorkerLoop(Worker* worker);
  // Waits (lock held) until `ready` or the run is aborted or `deadline` passes.
  Status WaitUntil(std::unique_lock<std::mutex>& lock, const std::function<bool()>& ready,
                   std::chrono::steady_clock::time_point deadline, const std::string& what);
  void Fail(const Status& status);                           // lock held
  Status CheckPointer(int32_t rank, const void* ptr) const;  // lock held
  std::string OpName(int32_t rank, uint32_t op) const;
  double Now() const;

  MaskRule mask_;
  HostOpsConfig config_;
  const Schedule* schedule_ = nullptr;
  std::vector<uint8_t> local_;
  std::chrono::steady_clock::time_point start_;

  mutable std::mutex mutex_;
  // Who waits on what, so that a change wakes only the threads it concerns (a notify_all to every
  // worker for every change made P ranks x 4 streams of threads wake for each of an all-to-all's
  // P^2 transfers: 40 ms of a 2-core machine's time per all-to-all at P = 8, docs/fidelity.md):
  // an idle worker waits on its own Worker::cv for queued work; a running task on state_cv_ for
  // ended ops, rendezvous and failure (WaitUntil); Finish and Abort on done_cv_ for ended tasks.
  std::condition_variable state_cv_;
  std::condition_variable done_cv_;
  // A change that ends waits of every kind (a failure, stopping): every condition variable.
  void NotifyEveryone();                          // lock need not be held
  std::vector<std::unique_ptr<Worker>> workers_;  // [rank * 4 + stream], local ranks only
  std::vector<std::vector<uint8_t>> ended_;       // [rank][op]: the op's end was reached
  std::vector<std::vector<OpTiming>> times_;
  std::vector<std::map<const void*, std::unique_ptr<char[]>>> memory_;
  std::vector<std::map<const void*, int64_t>> sizes_;
  struct PendingFree {
    int32_t rank;
    void* ptr;
    StreamUses uses;
  };
  // Lock held: frees the buffer if every use ended, else waits for one that has not.
  void Release(const PendingFree& f);
  std::vector<std::vector<std::vector<PendingFree>>>
      frees_after_;  // [rank][op]: frees waiting for its end
  std::vector<int64_t> live_, peak_;
  bool Computing() const;  // lock held
  int busy_ = 0;           // tasks queued or running on any worker
  int running_ = 0;        // tasks running
  int waiting_ = 0;        // running tasks that wait (deps, peers, messages)
  int64_t completed_ = 0;  // tasks that ended
  bool stopping_ = false;
  Status failure_;  // the first failure; set, every queued task is dropped and every wait ends

  // Receives between local ranks that wait for their sender, so that a timeout names the root
  // of a chain of waits (rank 3 waits on rank 0, which waits on a silent rank 1: which deadline
  // passes first depends on thread scheduling, the cause does not).
  struct WaitingRecv {
    int32_t dst_rank = 0, src_rank = 0;
    std::string what;     // "rank R op I (...): recv from rank S"
    bool silent = false;  // its sender drops the message (injected silent peer)
  };
  std::list<WaitingRecv> waiting_recvs_;  // lock held
  // The cause of a wait on `src` that timed out: a waiting receive whose sender drops it, else the
  // wait at the end of the chain that starts at `src` waiting for its own sender (empty when `src`
  // is not waiting for one). Lock held.
  std::string RootWait(int32_t src) const;
};

}  // namespace meshplan::exec
