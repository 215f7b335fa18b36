// Point-to-point message transport between ranks. Collectives are built on top of it (the
// engine's Prepare* in executor/device/device_engine.h), so a transport only moves tagged messages.
// Implementations: in-process threads (thread_transport.h) and MPI (mpi_transport.h, one process
// per rank).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "core/base/status.h"

namespace meshplan::exec {

using Clock = std::chrono::steady_clock;

class Transport {
 public:
  virtual ~Transport() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Sends `data` to `peer` with `tag`; may return before the peer receives (buffered).
  virtual Status Send(int peer, int64_t tag, const std::vector<float>& data) = 0;
  // Receives the next message from `peer` with `tag` (messages with the same (peer, tag) arrive in
  // order). Fails with a message naming the peer and tag when `deadline` passes or the run was
  // aborted.
  virtual Status Recv(int peer, int64_t tag, std::vector<float>* data,
                      Clock::time_point deadline) = 0;
  // Makes every rank's pending and future Send/Recv fail fast with `why`'s message (a rank that
  // fails calls this so the others stop instead of waiting for it). Its code decides the exit
  // status where the abort ends the process (MPI): 2 for kOutOfMemory, else 1.
  virtual void Abort(const Status& why) = 0;
};

}  // namespace meshplan::exec
