// The event queue (simulator/event_queue.h): events come out by (time, insertion order), and
// Second() names the event that Pop() returns after the top one when nothing is pushed between.
#include "simulator/event_queue.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>

namespace meshplan::sim {
namespace {

TEST(EventQueue, PopsByTimeThenInsertionOrderAndSecondNamesTheNextOne) {
  EventQueue q;
  EXPECT_EQ(q.Second(), nullptr);
  std::mt19937 random(7);
  // Times drawn from a small range, so many events share a nanosecond.
  for (int32_t k = 0; k < 2000; ++k)
    q.Push(static_cast<SimTime>(random() % 50), EventKind::kOpDone, k);
  SimTime last_time = -1;
  int32_t last_a = -1;
  while (!q.empty()) {
    const Event* second = q.Second();
    const bool has_second = second != nullptr;
    const Event expected_second = has_second ? *second : Event{};
    const Event e = q.Pop();
    ASSERT_GE(e.time, last_time);
    if (e.time == last_time) {
      ASSERT_GT(e.a, last_a);  // pushed in order of a
    }
    last_time = e.time;
    last_a = e.a;
    ASSERT_EQ(has_second, !q.empty());
    if (has_second) {
      EXPECT_EQ(q.Top().time, expected_second.time);
      EXPECT_EQ(q.Top().a, expected_second.a);
    }
  }
}

}  // namespace
}  // namespace meshplan::sim
