#include "executor/transport/mpi_transport.h"

#if MESHPLAN_HAVE_MPI

// Only MPI's C API is used; skip the deprecated C++ bindings (and their warnings).
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <utility>

namespace meshplan::exec {
namespace {

// The int64 tag travels as a trailer of this many floats after the payload.
constexpr int kTrailerFloats = static_cast<int>(sizeof(int64_t) / sizeof(float));
static_assert(sizeof(int64_t) == kTrailerFloats * sizeof(float));

// At most this many arrived messages are moved into the local queues per poll, so a peer that
// streams messages cannot starve the caller's deadline check.
constexpr int kMaxDrainPerPoll = 256;

std::string MpiErrorString(int rc) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(rc, text, &length) != MPI_SUCCESS) return "MPI error " + std::to_string(rc);
  return std::string(text, static_cast<size_t>(length));
}

std::string RecvContext(int rank, int peer, int64_t tag) {
  return "rank " + std::to_string(rank) + ": recv from rank " + std::to_string(peer) + " tag " +
         std::to_string(tag);
}

std::string SendContext(int rank, int peer, int64_t tag) {
  return "rank " + std::to_string(rank) + ": send to rank " + std::to_string(peer) + " tag " +
         std::to_string(tag);
}

// Polling back-off: yields first (cheap when a message is about to arrive, and lets other ranks
// run on an oversubscribed machine), then sleeps growing up to 200 us, never past `deadline`.
void Backoff(int idle_rounds, Clock::time_point deadline) {
  if (idle_rounds < 64) {
    std::this_thread::yield();
    return;
  }
  const int shift = std::min(idle_rounds - 64, 8);  // 1 us .. 256 us
  auto nap = std::min<Clock::duration>(std::chrono::microseconds(1 << shift),
                                       std::chrono::microseconds(200));
  const auto left = deadline - Clock::now();
  if (left <= Clock::duration::zero()) return;
  std::this_thread::sleep_for(std::min(nap, left));
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// MpiSession

Result<std::unique_ptr<MpiSession>> MpiSession::Init(int* argc, char*** argv) {
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized || finalized) {
    return Status::Internal("MPI was already initialized in this process (one MpiSession only)");
  }
  int provided = MPI_THREAD_SINGLE;
  const int rc = MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
  if (rc != MPI_SUCCESS) return Status::Internal("MPI_Init_thread failed: " + MpiErrorString(rc));
  if (provided < MPI_THREAD_SERIALIZED) {
    MPI_Finalize();
    return Status::Internal(
        "the MPI library provides only thread level " + std::to_string(provided) +
        "; the executor needs MPI_THREAD_SERIALIZED or more (an MPI built with thread support)");
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return std::unique_ptr<MpiSession>(new MpiSession(rank, size, provided));
}

MpiSession::~MpiSession() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

// ---------------------------------------------------------------------------------------------
// MpiTransport

struct MpiTransport::State {
  struct Key {
    int peer;
    int64_t tag;
    bool operator==(const Key& other) const { return peer == other.peer && tag == other.tag; }
  };
  struct KeyHash {
    size_t operator()(const Key& key) const {
      uint64_t h = static_cast<uint64_t>(key.tag) * 0x9E3779B97F4A7C15ull;
      return static_cast<size_t>(h ^ (static_cast<uint64_t>(key.peer) + (h >> 29)));
    }
  };
  // A receive matched by MPI_Improbe and posted with MPI_Imrecv, not yet complete. At most one per
  // peer, which keeps the peer's channel in order.
  struct PendingRecv {
    bool active = false;
    MPI_Request request = MPI_REQUEST_NULL;
    std::vector<float> buffer;  // payload followed by the tag trailer
  };

  // Guards everything below and serializes this transport's MPI calls. Timed so that Abort can
  // give up waiting for it.
  std::timed_mutex mu;
  // Sends in flight: send_requests[i] reads send_buffers[i].
  std::vector<MPI_Request> send_requests;
  std::vector<std::vector<float>> send_buffers;
  std::vector<PendingRecv> recvs;  // indexed by peer
  // Arrived messages not yet handed out; an entry exists only while its queue is non-empty.
  std::unordered_map<Key, std::deque<std::vector<float>>, KeyHash> arrived;

  // Frees the requests of completed sends and their buffers. REQUIRES: mu held.
  Status ReapSends(int rank) {
    if (send_requests.empty()) return Status::Ok();
    int completed = 0;
    const int rc =
        MPI_Testsome(static_cast<int>(send_requests.size()), send_requests.data(), &completed,
                     scratch_indices(send_requests.size()), MPI_STATUSES_IGNORE);
    if (rc != MPI_SUCCESS) {
      return Status::Io("rank " + std::to_string(rank) +
                        ": completing sends: " + MpiErrorString(rc));
    }
    if (completed == 0 || completed == MPI_UNDEFINED) return Status::Ok();
    // Completed requests are now MPI_REQUEST_NULL; compact both vectors in step.
    size_t kept = 0;
    for (size_t i = 0; i < send_requests.size(); ++i) {
      if (send_requests[i] == MPI_REQUEST_NULL) continue;
      if (kept != i) {
        send_requests[kept] = send_requests[i];
        send_buffers[kept] = std::move(send_buffers[i]);
      }
      ++kept;
    }
    send_requests.resize(kept);
    send_buffers.resize(kept);
    return Status::Ok();
  }

  // Moves messages that have arrived from `peer` into `arrived` (at most kMaxDrainPerPoll), in
  // channel order. Never blocks. REQUIRES: mu held.
  Status DrainChannel(int rank, int peer) {
    PendingRecv& pending = recvs[static_cast<size_t>(peer)];
    for (int drained = 0; drained < kMaxDrainPerPoll;) {
      if (pending.active) {
        int done = 0;
        MPI_Status status;
        const int rc = MPI_Test(&pending.request, &done, &status);
        if (rc != MPI_SUCCESS) {
          return Status::Io("rank " + std::to_string(rank) + ": receiving from rank " +
                            std::to_string(peer) + ": " + MpiErrorString(rc));
        }
        if (!done) return Status::Ok();
        pending.active = false;
        std::vector<float> message = std::move(pending.buffer);
        pending.buffer = {};
        int64_t tag = 0;
        std::memcpy(&tag, message.data() + (message.size() - kTrailerFloats), sizeof(tag));
        message.resize(message.size() - kTrailerFloats);
        arrived[Key{peer, tag}].push_back(std::move(message));
        ++drained;
        continue;
      }
      int found = 0;
      MPI_Message handle;
      MPI_Status status;
      int rc = MPI_Improbe(peer, kMpiChannelTag, MPI_COMM_WORLD, &found, &handle, &status);
      if (rc != MPI_SUCCESS) {
        return Status::Io("rank " + std::to_string(rank) + ": probing rank " +
                          std::to_string(peer) + ": " + MpiErrorString(rc));
      }
      if (!found) return Status::Ok();
      int bytes = 0;
      MPI_Get_count(&status, MPI_BYTE, &bytes);
      if (bytes == MPI_UNDEFINED || bytes < static_cast<int>(sizeof(int64_t)) ||
          bytes % static_cast<int>(sizeof(float)) != 0) {
        // Receive and drop it so the channel stays usable, then report.
        std::vector<char> junk(static_cast<size_t>(std::max(bytes, 0)) + 1);
        MPI_Mrecv(junk.data(), static_cast<int>(junk.size()), MPI_BYTE, &handle, MPI_STATUS_IGNORE);
        return Status::Internal("rank " + std::to_string(rank) + ": malformed message of " +
                                std::to_string(bytes) + " bytes from rank " + std::to_string(peer) +
                                " on MPI tag " + std::to_string(kMpiChannelTag) +
                                " (another user of the tag?)");
      }
      const int count = bytes / static_cast<int>(sizeof(float));
      pending.buffer.resize(static_cast<size_t>(count));
      rc = MPI_Imrecv(pending.buffer.data(), count, MPI_FLOAT, &handle, &pending.request);
      if (rc != MPI_SUCCESS) {
        return Status::Io("rank " + std::to_string(rank) + ": receiving from rank " +
                          std::to_string(peer) + ": " + MpiErrorString(rc));
      }
      pending.active = true;
    }
    return Status::Ok();
  }

 private:
  int* scratch_indices(size_t n) {
    if (indices_.size() < n) indices_.resize(n);
    return indices_.data();
  }
  std::vector<int> indices_;
};

MpiTransport::MpiTransport(const MpiSession& session) : MpiTransport(session, Options{}) {}

MpiTransport::MpiTransport(const MpiSession& session, Options options)
    : state_(std::make_unique<State>()),
      rank_(session.rank()),
      size_(session.size()),
      options_(options) {
  state_->recvs.resize(static_cast<size_t>(size_));
}

MpiTransport::~MpiTransport() {
  const Clock::time_point deadline = Clock::now() + options_.drain_timeout;
  (void)Flush(deadline);
  std::lock_guard<std::timed_mutex> lock(state_->mu);
  // Matched receives must complete before their buffers may be freed.
  for (int idle = 0;; ++idle) {
    bool any = false;
    for (State::PendingRecv& pending : state_->recvs) {
      if (!pending.active) continue;
      int done = 0;
      if (MPI_Test(&pending.request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS || done) {
        pending.active = false;
      } else {
        any = true;
      }
    }
    if (!any || Clock::now() >= deadline) break;
    Backoff(idle, deadline);
  }
  size_t abandoned = 0;
  auto abandon = [&](MPI_Request* request, std::vector<float>* buffer) {
    MPI_Request_free(request);
    // MPI may still touch the buffer: leak it on purpose.
    new std::vector<float>(std::move(*buffer));  // NOLINT: deliberate leak
    ++abandoned;
  };
  for (size_t i = 0; i < state_->send_requests.size(); ++i) {
    abandon(&state_->send_requests[i], &state_->send_buffers[i]);
  }
  for (State::PendingRecv& pending : state_->recvs) {
    if (pending.active) abandon(&pending.request, &pending.buffer);
  }
  if (abandoned > 0) {
    std::fprintf(stderr,
                 "meshplan: rank %d: %zu MPI messages still in flight after %lld ms at shutdown; "
                 "abandoned\n",
                 rank_, abandoned, static_cast<long long>(options_.drain_timeout.count()));
  }
}

Status MpiTransport::Send(int peer, int64_t tag, const std::vector<float>& data) {
  if (peer < 0 || peer >= size_) {
    return Status::Internal(SendContext(rank_, peer, tag) + ": no such rank (the job has " +
                            std::to_string(size_) + ")");
  }
  if (data.size() > static_cast<size_t>(INT_MAX - kTrailerFloats)) {
    return Status::Internal(SendContext(rank_, peer, tag) + ": " + std::to_string(data.size()) +
                            " floats is more than one MPI message can carry");
  }
  // Build the wire copy outside the lock.
  std::vector<float> wire;
  wire.reserve(data.size() + kTrailerFloats);
  wire.assign(data.begin(), data.end());
  wire.resize(data.size() + kTrailerFloats);
  std::memcpy(wire.data() + data.size(), &tag, sizeof(tag));

  std::lock_guard<std::timed_mutex> lock(state_->mu);
  MESHPLAN_RETURN_IF_ERROR(state_->ReapSends(rank_));
  MPI_Request request = MPI_REQUEST_NULL;
  const int rc = MPI_Isend(wire.data(), static_cast<int>(wire.size()), MPI_FLOAT, peer,
                           kMpiChannelTag, MPI_COMM_WORLD, &request);
  if (rc != MPI_SUCCESS)
    return Status::Io(SendContext(rank_, peer, tag) + ": " + MpiErrorString(rc));
  // Moving the vector keeps its heap buffer, which MPI is reading.
  state_->send_requests.push_back(request);
  state_->send_buffers.push_back(std::move(wire));
  return Status::Ok();
}

Status MpiTransport::Recv(int peer, int64_t tag, std::vector<float>* data,
                          Clock::time_point deadline) {
  if (peer < 0 || peer >= size_) {
    return Status::Internal(RecvContext(rank_, peer, tag) + ": no such rank (the job has " +
                            std::to_string(size_) + ")");
  }
  if (data == nullptr) return Status::Internal(RecvContext(rank_, peer, tag) + ": null output");
  const State::Key key{peer, tag};
  for (int idle = 0;; ++idle) {
    {
      std::lock_guard<std::timed_mutex> lock(state_->mu);
      MESHPLAN_RETURN_IF_ERROR(state_->ReapSends(rank_));
      Status drained = state_->DrainChannel(rank_, peer);
      if (!drained.ok()) return drained.WithContext(RecvContext(rank_, peer, tag));
      auto it = state_->arrived.find(key);
      if (it != state_->arrived.end()) {
        *data = std::move(it->second.front());
        it->second.pop_front();
        if (it->second.empty()) state_->arrived.erase(it);
        return Status::Ok();
      }
    }
    if (Clock::now() >= deadline) {
      return Status::Io(RecvContext(rank_, peer, tag) + ": no message within the deadline");
    }
    Backoff(idle, deadline);
  }
}

void MpiTransport::Abort(const Status& why) {
  std::string line = why.message().empty() ? std::string("(no reason given)") : why.message();
  std::replace(line.begin(), line.end(), '\n', ' ');
  std::replace(line.begin(), line.end(), '\r', ' ');
  std::fprintf(stderr, "meshplan: rank %d: aborting the MPI job: %s\n", rank_, line.c_str());
  std::fflush(stderr);
  // Keep other threads of this rank out of MPI while aborting (needed below
  // MPI_THREAD_MULTIPLE); every critical section is a few non-blocking calls, and after a second
  // abort anyway.
  const bool locked = state_->mu.try_lock_for(std::chrono::seconds(1));
  (void)locked;  // never released: this function does not return
  // Exit status 1: a run that failed after it started (docs/usage.md), 2 for memory the machine
  // could not give; refusals before the run end through the start barrier with exit 2 instead.
  MPI_Abort(MPI_COMM_WORLD, why.code() == ErrorCode::kOutOfMemory ? 2 : 1);
  std::abort();  // MPI_Abort does not return; this only guards a broken MPI library.
}

Status MpiTransport::Flush(Clock::time_point deadline) {
  for (int idle = 0;; ++idle) {
    {
      std::lock_guard<std::timed_mutex> lock(state_->mu);
      MESHPLAN_RETURN_IF_ERROR(state_->ReapSends(rank_));
      if (state_->send_requests.empty()) return Status::Ok();
      if (Clock::now() >= deadline) {
        return Status::Io("rank " + std::to_string(rank_) + ": " +
                          std::to_string(state_->send_requests.size()) +
                          " sends still in flight at the deadline (a peer stopped receiving?)");
      }
    }
    Backoff(idle, deadline);
  }
}

}  // namespace meshplan::exec

#endif  // MESHPLAN_HAVE_MPI
