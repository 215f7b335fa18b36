// MPI transport: one process per rank under `mpirun`, over MPI_COMM_WORLD. Built only when CMake
// finds MPI (cmake/Mpi.cmake defines MESHPLAN_HAVE_MPI=1); otherwise this header declares nothing.
//
// Wire format and tags. MPI tags may be as small as 32767 (MPI_TAG_UB), but schedule tags are
// int64. Every message therefore travels on one fixed MPI tag (kMpiChannelTag) per ordered pair
// of ranks (the MPI source tells the pairs apart), with the int64 tag appended as an 8-byte
// trailer after the float payload. MPI does not reorder messages with the same (source, tag,
// communicator), so the channel from a peer is FIFO; Recv drains that channel into local
// per-(peer, tag) queues and hands out the oldest message of the requested tag. This keeps FIFO
// order per (peer, tag), never confuses two tags (unlike hashing tags into MPI's tag space), and
// never posts a receive that is not already matched, so no receive ever needs MPI_Cancel.
//
// MPI's own headers are kept out of this one (the MPI state lives behind a pointer).
#pragma once

#if MESHPLAN_HAVE_MPI

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "executor/transport/transport.h"

namespace meshplan::exec {

// The only MPI tag that MpiTransport uses on MPI_COMM_WORLD (below the MPI minimum of 32767 for
// MPI_TAG_UB). Other code in the process must not use it on MPI_COMM_WORLD.
inline constexpr int kMpiChannelTag = 0x4D50;  // "MP"

// RAII for MPI_Init_thread / MPI_Finalize. At most one per process, and only once: MPI cannot be
// initialized again after MPI_Finalize.
class MpiSession {
 public:
  // Initializes MPI, requesting MPI_THREAD_MULTIPLE and requiring at least MPI_THREAD_SERIALIZED
  // (MpiTransport serializes its own MPI calls, so several threads of a rank may use it).
  // Installs MPI_ERRORS_RETURN on MPI_COMM_WORLD so MPI failures come back as Status instead of
  // killing the job. Fails (kInternal) when MPI was already initialized or gives too little
  // thread support. `argc`/`argv` may be null.
  static Result<std::unique_ptr<MpiSession>> Init(int* argc, char*** argv);
  // Calls MPI_Finalize. Every MpiTransport must be destroyed first.
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // The thread level MPI provided (MPI_THREAD_SERIALIZED or MPI_THREAD_MULTIPLE).
  int thread_level() const { return thread_level_; }

 private:
  MpiSession(int rank, int size, int thread_level)
      : rank_(rank), size_(size), thread_level_(thread_level) {}
  int rank_;
  int size_;
  int thread_level_;
};

// One rank's transport over MPI_COMM_WORLD. Construction is local (no collective call), so a rank
// that fails before building its transport cannot hang the others. All methods are thread-safe;
// MPI calls are serialized by an internal mutex and blocking waits poll without holding it.
class MpiTransport : public Transport {
 public:
  struct Options {
    // How long the destructor waits for sends (and already matched receives) still in flight.
    std::chrono::milliseconds drain_timeout{10000};
  };

  // REQUIRES: `session` outlives the transport; at most one MpiTransport per process at a time.
  explicit MpiTransport(const MpiSession& session);
  MpiTransport(const MpiSession& session, Options options);
  // REQUIRES: no other thread is inside a method of this transport.
  // Waits up to options.drain_timeout for every in-flight send to complete; requests still
  // pending after that are freed and their buffers deliberately leaked (MPI may still read them),
  // and one line saying how many is printed on stderr.
  ~MpiTransport() override;
  MpiTransport(const MpiTransport&) = delete;
  MpiTransport& operator=(const MpiTransport&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  // MPI_Isend of a private copy (payload plus tag trailer) that lives until the send completes;
  // completed sends are reaped on later calls. Returns without waiting for the receiver.
  // Fails (kInternal) for a peer outside [0, size) or a payload over INT_MAX - 2 floats, and
  // (kIo) when MPI reports an error. Sending to oneself is allowed.
  Status Send(int peer, int64_t tag, const std::vector<float>& data) override;
  // Polls (MPI_Improbe / MPI_Imrecv / MPI_Test, backing off from yields to sleeps of at most
  // 200 us) until a message with `tag` from `peer` is available or `deadline` passes: then fails
  // (kIo) with "rank R: recv from rank P tag T: no message within the deadline". Messages of other
  // tags from `peer` that arrive meanwhile are kept for later Recv calls. A deadline in the past
  // still returns a message that has already arrived.
  Status Recv(int peer, int64_t tag, std::vector<float>* data, Clock::time_point deadline) override;
  // Prints "meshplan: rank R: aborting the MPI job: <why>" (newlines in `why` replaced by spaces)
  // on stderr as one line, then MPI_Abort(MPI_COMM_WORLD, code): 2 for kOutOfMemory, else 1 (a
  // run that failed after it started), which ends every rank of the job (mpirun exits with that
  // code). Does not return; should MPI_Abort ever return, calls std::abort().
  [[noreturn]] void Abort(const Status& why) override;

  // Waits until every send issued so far has completed locally (its buffer was taken by MPI or
  // the receiver) or `deadline` passes: then fails (kIo) saying how many are still pending.
  Status Flush(Clock::time_point deadline);

 private:
  struct State;
  std::unique_ptr<State> state_;
  int rank_;
  int size_;
  Options options_;
};

}  // namespace meshplan::exec

#endif  // MESHPLAN_HAVE_MPI
