#include "executor/transport/thread_transport.h"

#include <cassert>
#include <string>
#include <utility>

namespace meshplan::exec {
namespace {

std::string RecvContext(int dst, int src, int64_t tag) {
  return "rank " + std::to_string(dst) + ": recv from rank " + std::to_string(src) + " tag " +
         std::to_string(tag);
}

std::string SendContext(int src, int dst, int64_t tag) {
  return "rank " + std::to_string(src) + ": send to rank " + std::to_string(dst) + " tag " +
         std::to_string(tag);
}

}  // namespace

ThreadFabric::ThreadFabric(int ranks) {
  assert(ranks >= 1);
  inboxes_.reserve(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r) inboxes_.push_back(std::make_unique<Inbox>());
}

Status ThreadFabric::Deliver(int src, int dst, int64_t tag, const std::vector<float>& data) {
  if (src < 0 || src >= ranks() || dst < 0 || dst >= ranks()) {
    return Status::Internal(SendContext(src, dst, tag) + ": no such rank (the fabric has " +
                            std::to_string(ranks()) + ")");
  }
  if (aborted()) return Status::Io(SendContext(src, dst, tag) + ": aborted: " + abort_reason());
  std::vector<float> copy(data);  // copied outside the lock
  Inbox& inbox = *inboxes_[static_cast<size_t>(dst)];
  {
    std::lock_guard<std::mutex> lock(inbox.mu);
    inbox.mailboxes[Key{src, tag}].push_back(std::move(copy));
  }
  // Several threads of the receiving rank may wait on different mailboxes, so wake them all; each
  // rechecks its own mailbox.
  inbox.cv.notify_all();
  return Status::Ok();
}

Status ThreadFabric::Take(int src, int dst, int64_t tag, std::vector<float>* data,
                          Clock::time_point deadline) {
  if (src < 0 || src >= ranks() || dst < 0 || dst >= ranks()) {
    return Status::Internal(RecvContext(dst, src, tag) + ": no such rank (the fabric has " +
                            std::to_string(ranks()) + ")");
  }
  if (data == nullptr) return Status::Internal(RecvContext(dst, src, tag) + ": null output");
  Inbox& inbox = *inboxes_[static_cast<size_t>(dst)];
  const Key key{src, tag};
  std::unique_lock<std::mutex> lock(inbox.mu);
  auto it = inbox.mailboxes.end();
  // The predicate is evaluated under inbox.mu; Abort takes the same mutex before notifying, so a
  // wake-up cannot be lost between the check and the wait.
  const bool ready = inbox.cv.wait_until(lock, deadline, [&] {
    if (aborted()) return true;
    it = inbox.mailboxes.find(key);
    return it != inbox.mailboxes.end();
  });
  if (aborted()) {
    lock.unlock();
    return Status::Io(RecvContext(dst, src, tag) + ": aborted: " + abort_reason());
  }
  if (!ready) return Status::Io(RecvContext(dst, src, tag) + ": no message within the deadline");
  std::deque<std::vector<float>>& queue = it->second;
  *data = std::move(queue.front());
  queue.pop_front();
  if (queue.empty()) inbox.mailboxes.erase(it);
  return Status::Ok();
}

void ThreadFabric::Abort(const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(reason_mu_);
    if (!aborted_.load(std::memory_order_relaxed)) {
      reason_ = why.empty() ? std::string("(no reason given)") : why;
      aborted_.store(true, std::memory_order_release);
    }
  }
  for (const std::unique_ptr<Inbox>& inbox : inboxes_) {
    // Taking the mutex orders this wake-up after any waiter's predicate check.
    { std::lock_guard<std::mutex> lock(inbox->mu); }
    inbox->cv.notify_all();
  }
}

std::string ThreadFabric::abort_reason() const {
  std::lock_guard<std::mutex> lock(reason_mu_);
  return reason_;
}

ThreadTransport::ThreadTransport(std::shared_ptr<ThreadFabric> fabric, int rank)
    : fabric_(std::move(fabric)), rank_(rank) {
  assert(fabric_ != nullptr && rank_ >= 0 && rank_ < fabric_->ranks());
}

Status ThreadTransport::Send(int peer, int64_t tag, const std::vector<float>& data) {
  return fabric_->Deliver(rank_, peer, tag, data);
}

Status ThreadTransport::Recv(int peer, int64_t tag, std::vector<float>* data,
                             Clock::time_point deadline) {
  return fabric_->Take(peer, rank_, tag, data, deadline);
}

void ThreadTransport::Abort(const Status& why) { fabric_->Abort(why.message()); }

std::vector<std::unique_ptr<Transport>> MakeThreadTransports(int ranks) {
  auto fabric = std::make_shared<ThreadFabric>(ranks);
  std::vector<std::unique_ptr<Transport>> transports;
  transports.reserve(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r)
    transports.push_back(std::make_unique<ThreadTransport>(fabric, r));
  return transports;
}

}  // namespace meshplan::exec
