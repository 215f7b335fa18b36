// How one execution runs, whatever the backend (host streams or CUDA) and transport: the one
// options type of the execution engine (executor/device/device_engine.h) and its entry points
// (executor/execute.h).
#pragma once

#include <chrono>
#include <cstdint>

#include "executor/device/kernel_args.h"

namespace meshplan::exec {

struct RunOptions {
  // Element type of the inputs Q, K, V, dO as the kernels read them (accumulation is fp32). The
  // host backend takes all three; the CUDA kernels take bf16 and fp16.
  InputType type = InputType::kFp32;
  KernelPath path = KernelPath::kAuto;  // CUDA only
  // A receive (or a rendezvous with a peer's send) waiting longer than this fails, naming the
  // rank, op and peer.
  std::chrono::milliseconds recv_timeout{30000};
  // The run fails when no work completes for this long (NCCL communicators are then aborted).
  double progress_timeout_s = 120;
  // Fault injection (tests and `meshplan execute --inject-*`): rank `fail_rank` fails at its op
  // `fail_op` as a failing launch would; rank `silent_rank` drops every message it sends, like a
  // peer that never answers. -1 disables.
  int fail_rank = -1;
  int64_t fail_op = -1;
  int silent_rank = -1;
  // Happens-before checker (tests, debugging): every read of a buffer must be ordered after the
  // op that wrote it by the schedule's dependencies and stream order; a violation fails the run
  // naming the op and the buffer. Costs a few integers per op.
  bool check_dependencies = false;
};

}  // namespace meshplan::exec
