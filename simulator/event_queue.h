// The simulator's event queue: events ordered by (time, insertion order), so events at the same
// nanosecond run in the order they were scheduled and every replay is deterministic.
#pragma once

#include <cstdint>
#include <queue>
#include <vector>

#include "simulator/sim_time.h"

namespace meshplan::sim {

enum class EventKind : uint8_t {
  kOpDone,     // a: rank, b: op
  kFlowStart,  // a: pending-flow index (the message's latency has elapsed)
  kFlowDone,   // a: flow id, version: the flow's rate version when scheduled
  kSharedDone, // a: rank, b: op (a kernel on a shared device), version: the device's epoch
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
    heap_.push(Event{time, next_seq_++, kind, a, b, version});
  }
  bool empty() const { return heap_.empty(); }
  // REQUIRES: !empty()
  const Event& Top() const { return heap_.top(); }
  Event Pop() {
    Event e = heap_.top();
    heap_.pop();
    return e;
  }

 private:
  struct Later {
    bool operator()(const Event& x, const Event& y) const {
      return x.time != y.time ? x.time > y.time : x.seq > y.seq;
    }
  };
  std::priority_queue<Event, std::vector<Event>, Later> heap_;
  uint64_t next_seq_ = 0;
};

}  // namespace meshplan::sim
