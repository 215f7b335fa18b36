// In-process transport: P ranks that are threads of one process exchange messages through a
// shared ThreadFabric. Used by `meshplan execute --transport threads` and by the tests.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/base/status.h"
#include "executor/transport/transport.h"

namespace meshplan::exec {

// Shared state of P in-process ranks: for every receiving rank an inbox of FIFO mailboxes keyed
// by (source rank, tag), guarded by one mutex and one condition variable, plus a fabric-wide abort
// flag with the first reason given. Thread-safe; every method may be called from any thread.
class ThreadFabric {
 public:
  // REQUIRES: ranks >= 1.
  explicit ThreadFabric(int ranks);
  ThreadFabric(const ThreadFabric&) = delete;
  ThreadFabric& operator=(const ThreadFabric&) = delete;

  int ranks() const { return static_cast<int>(inboxes_.size()); }

  // Appends a copy of `data` to the mailbox (src, tag) of rank `dst` and wakes its receivers.
  // Never blocks on the receiver (unbounded buffering). Fails (kIo) once the fabric is aborted,
  // and (kInternal) when src or dst is not a rank.
  Status Deliver(int src, int dst, int64_t tag, const std::vector<float>& data);

  // Moves the oldest message of mailbox (src, tag) of rank `dst` into `*data`, waiting until one
  // exists, `deadline` passes (kIo, "... no message within the deadline") or the fabric is
  // aborted (kIo, "... aborted: <reason>"). Abort wins over a message that is already queued, so
  // every rank stops promptly. Error messages start with "rank <dst>: recv from rank <src> tag
  // <tag>".
  Status Take(int src, int dst, int64_t tag, std::vector<float>* data, Clock::time_point deadline);

  // Marks the fabric aborted (the first reason is kept; later calls only wake waiters again) and
  // wakes every blocked Take. Idempotent.
  void Abort(const std::string& why);

  bool aborted() const { return aborted_.load(std::memory_order_acquire); }
  // The first abort reason; empty when not aborted.
  std::string abort_reason() const;

 private:
  struct Key {
    int src;
    int64_t tag;
    bool operator==(const Key& other) const { return src == other.src && tag == other.tag; }
  };
  struct KeyHash {
    size_t operator()(const Key& key) const {
      uint64_t h = static_cast<uint64_t>(key.tag) * 0x9E3779B97F4A7C15ull;
      return static_cast<size_t>(h ^ (static_cast<uint64_t>(key.src) + (h >> 29)));
    }
  };
  struct Inbox {
    std::mutex mu;
    std::condition_variable cv;
    // An entry exists only while its queue is non-empty, so unique tags do not accumulate.
    std::unordered_map<Key, std::deque<std::vector<float>>, KeyHash> mailboxes;
  };

  std::vector<std::unique_ptr<Inbox>> inboxes_;
  std::atomic<bool> aborted_{false};
  mutable std::mutex reason_mu_;
  std::string reason_;  // guarded by reason_mu_
};

// One rank's view of a ThreadFabric. Send and Recv may be called concurrently from several
// threads of the same rank. The fabric lives as long as its longest-living transport.
class ThreadTransport : public Transport {
 public:
  // REQUIRES: fabric != nullptr and 0 <= rank < fabric->ranks().
  ThreadTransport(std::shared_ptr<ThreadFabric> fabric, int rank);

  int rank() const override { return rank_; }
  int size() const override { return fabric_->ranks(); }
  // Copies `data` into the peer's mailbox; returns without waiting for the receiver. Sending to
  // oneself is allowed.
  Status Send(int peer, int64_t tag, const std::vector<float>& data) override;
  Status Recv(int peer, int64_t tag, std::vector<float>* data, Clock::time_point deadline) override;
  // Aborts the whole fabric: every rank's blocked and future Send/Recv fail with
  // "...: aborted: <why>". `why` is kept verbatim, so it should name the failing rank and op.
  void Abort(const Status& why) override;

  const std::shared_ptr<ThreadFabric>& fabric() const { return fabric_; }

 private:
  std::shared_ptr<ThreadFabric> fabric_;
  int rank_;
};

// Creates one fabric of `ranks` ranks and its transports; element r is rank r.
// REQUIRES: ranks >= 1.
std::vector<std::unique_ptr<Transport>> MakeThreadTransports(int ranks);

}  // namespace meshplan::exec
