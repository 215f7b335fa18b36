// All-gather KV's schedule expansion (planner/schemes/allgather.cc): CheckSchedule passes and every
// rank sends and receives exactly the bytes of docs/schemes.md.
#include <gtest/gtest.h>

#include "tests/planner/schemes/expansion_cases.h"

namespace meshplan::planner::scheme_tests {
namespace {

TEST(SchemeScheduleTest, AllGatherKV) {
  RunAllPasses(Make(Scheme::kAllGatherKV, 1, Layout::kZigzag, Mask::Causal(), 8, 8));
  RunAllPasses(Make(Scheme::kAllGatherKV, 4, Layout::kZigzag, Mask::Causal(), 8, 2));
  RunAllPasses(Make(Scheme::kAllGatherKV, 6, Layout::kContiguous, UnevenDocs(), 8, 8));
  RunAllPasses(Make(Scheme::kAllGatherKV, 8, Layout::kStriped, Mask::Full(), 4, 4));
  RunAllPasses(Make(Scheme::kAllGatherKV, 2, Layout::kZigzag, Mask::Window(200), 8, 8));
}

// Invalid sizes are errors (kInvalidInput), not malformed schedules.
TEST(SchemeScheduleTest, AllGatherKVInvalidSizesAreErrors) {
  ExpectInvalid(
      Make(Scheme::kAllGatherKV, 4, Layout::kStriped, Mask::Window(10), 8, 8));  // striped + window
}

}  // namespace
}  // namespace meshplan::planner::scheme_tests
