// What the execution engine (executor/device/device_engine.h) needs from a device: memory, the
// four streams of every rank it runs, op brackets that carry dependencies and timing, the
// attention kernels, and transfers. Two backends: CUDA (executor/cuda/cuda_device_ops.h: streams,
// events, NCCL or device-to-device copies) and the host (host_device_ops.h: a worker thread per
// stream, host memory, copies or a Transport between processes). Work is asynchronous on both:
// a call enqueues it on a stream and returns.
//
// Contract: the engine calls BeginOp before enqueuing an op's work and EndOp after it; work of an
// op goes to the stream named in BeginOp. BeginOp makes that stream wait for the ops in `deps`
// (indices into the same rank's program, all already ended). Pointers are device pointers of the
// named rank (host pointers in the emulation). Only ranks this process runs are ever named.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/plan/schedule.h"
#include "executor/device/kernel_args.h"
#include "executor/device/run_options.h"
#include "executor/timing/op_timing.h"

namespace meshplan::exec {

// One point-to-point copy of an exchange step: `bytes` from src (on rank src_rank, part of op
// src_op) to dst (on dst_rank, part of dst_op). When only one side runs in this process the other
// side's pointer is null (NCCL posts only the local half).
struct Transfer {
  int32_t src_rank = 0, dst_rank = 0;
  uint32_t src_op = 0, dst_op = 0;
  StreamId src_stream = StreamId::kSend, dst_stream = StreamId::kRecv;
  const void* src = nullptr;
  void* dst = nullptr;
  int64_t bytes = 0;
  // Fault injection: the source is a silent peer, so nothing arrives; the receiving side fails
  // (at its receive deadline where the backend can wait for one).
  bool silent = false;
};

// Last op of each stream of a rank that used a buffer (-1: none); a buffer is freed only after
// all of them completed.
using StreamUses = std::array<int64_t, 4>;

class DeviceOps {
 public:
  virtual ~DeviceOps() = default;
  virtual std::string Describe() const = 0;  // "CUDA (NVIDIA H200, sm_90, 8 virtual ranks)"
  // Sets up the ranks this process runs (`local[r]`), their streams and per-op events.
  virtual Status Prepare(const Schedule& schedule, const std::vector<uint8_t>& local) = 0;

  virtual Result<void*> Allocate(int32_t rank, int64_t bytes, StreamId stream) = 0;
  // Frees after the listed ops completed (stream-ordered; the pointer may be reused at once).
  virtual Status Free(int32_t rank, void* ptr, const StreamUses& uses) = 0;
  // Copies host data into a fresh allocation before the run starts or during issue (blocking the
  // host; small arrays only during issue).
  virtual Result<void*> Upload(int32_t rank, const void* host, int64_t bytes) = 0;
  // After Finish: copies device data back to the host.
  virtual Status Download(int32_t rank, void* host, const void* device, int64_t bytes) = 0;

  // Marks the start of the run for every local rank (timing origin).
  virtual Status Start() = 0;
  virtual Status BeginOp(int32_t rank, uint32_t op, StreamId stream,
                         const std::vector<uint32_t>& deps) = 0;
  virtual Status EndOp(int32_t rank, uint32_t op, StreamId stream) = 0;

  virtual Status Forward(int32_t rank, StreamId stream, const BlockProblem& p, const TensorView& q,
                         const TensorView& k, const TensorView& v, const TensorView& o,
                         const TensorView& lse) = 0;
  virtual Status Backward(int32_t rank, StreamId stream, const BlockProblem& p, const TensorView& q,
                          const TensorView& k, const TensorView& v, const TensorView& d_o,
                          const TensorView& lse, const TensorView& delta, const TensorView& dq,
                          const TensorView& dk, const TensorView& dv) = 0;
  virtual Status MergePartial(int32_t rank, StreamId stream, float* o, float* lse,
                              const float* o_in, const float* lse_in, int64_t count,
                              int32_t dim) = 0;
  virtual Status AddInto(int32_t rank, StreamId stream, float* acc, const float* in, int64_t n) = 0;
  virtual Status Delta(int32_t rank, StreamId stream, InputType type, const float* o,
                       const void* d_o, float* delta, int64_t batch, int64_t rows, int32_t heads,
                       int32_t dim) = 0;
  virtual Status Fill(int32_t rank, StreamId stream, float* data, float value, int64_t n) = 0;
  virtual Status RowCopy(int32_t rank, StreamId stream, const exec::RowCopy& copy) = 0;

  // Posts one exchange step's transfers together (one NCCL group). Each transfer's destination
  // is ready for use on dst_stream afterwards, and the source op's stream does not pass the end of
  // the transfer (so the source may be freed after the source op).
  virtual Status Exchange(const std::vector<Transfer>& transfers) = 0;

  // Waits for all issued work, up to `timeout_s` (then aborts: NCCL communicators are aborted,
  // never left hanging), and reports errors naming the rank. Fills per-rank per-op times
  // (ranks not run here stay empty).
  virtual Status Finish(double timeout_s, std::vector<std::vector<OpTiming>>* times) = 0;
  // After a failure on the host side (the engine could not issue an op): stops the run. Work not
  // yet started is dropped, waits end, peers in other processes are told; returns when no work of
  // this object runs any more, so buffers may be freed.
  virtual void Abort(const Status& why) = 0;
};

}  // namespace meshplan::exec
