// The simulator's event queue: events ordered by (time, insertion order), so events at the same
// nanosecond run in the order they were scheduled and every replay is deterministic.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "simulator/sim_time.h"

namespace meshplan::sim {

enum class EventKind : uint8_t {
  kOpDone,      // a: rank, b: op
  kFlowStart,   // a: pending-flow index (the message's latency has elapsed)
  kFlowDone,    // a: flow id, version: the flow's rate version when scheduled
  kSharedDone,  // a: rank, b: op (a kernel on a shared device), version: the device's epoch
};

struct Event {
  SimTime time = 0;
  uint64_t seq = 0;
  EventKind kind = EventKind::kOpDone;
  int32_t a = 0;
  int32_t b = 0;
  uint32_t version = 0;
};

class EventQueue {
 public:
  void Push(SimTime time, EventKind kind, int32_t a, int32_t b = 0, uint32_t version = 0) {
    heap_.push_back(Event{time, next_seq_++, kind, a, b, version});
    std::push_heap(heap_.begin(), heap_.end(), Later{});
  }
  bool empty() const { return heap_.empty(); }
  // REQUIRES: !empty()
  const Event& Top() const { return heap_.front(); }
  // The event that would come out after Top() if nothing were pushed before, or null: the
  // earlier of the root's children. Only a hint (for prefetching): pushes may overtake it.
  const Event* Second() const {
    if (heap_.size() < 2) return nullptr;
    if (heap_.size() == 2 || Later{}(heap_[2], heap_[1])) return &heap_[1];
    return &heap_[2];
  }
  Event Pop() {
    std::pop_heap(heap_.begin(), heap_.end(), Later{});
    Event e = heap_.back();
    heap_.pop_back();
    return e;
  }

 private:
  struct Later {
    bool operator()(const Event& x, const Event& y) const {
      return x.time != y.time ? x.time > y.time : x.seq > y.seq;
    }
  };
  std::vector<Event> heap_;  // a binary heap under Later (the earliest event at the front)
  uint64_t next_seq_ = 0;
};

}  // namespace meshplan::sim
