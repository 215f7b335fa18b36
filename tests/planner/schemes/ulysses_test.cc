// Ulysses' schedule expansion (planner/schemes/ulysses.cc): CheckSchedule passes and every rank
// sends and receives exactly the bytes of docs/schemes.md.
#include <gtest/gtest.h>

#include "tests/planner/schemes/expansion_cases.h"

namespace meshplan::planner::scheme_tests {
namespace {

TEST(SchemeScheduleTest, Ulysses) {
  RunAllPasses(Ulysses(1, Mask::Causal(), 8, 8));
  RunAllPasses(Ulysses(2, Mask::Causal(), 8, 2));  // GQA
  RunAllPasses(Ulysses(4, Mask::Full(), 8, 4));
  RunAllPasses(Ulysses(8, UnevenDocs(), 8, 8));
  RunAllPasses(Ulysses(6, Mask::Window(300), 12, 6));
}

// Invalid sizes are errors (kInvalidInput), not malformed schedules.
TEST(SchemeScheduleTest, UlyssesInvalidSizesAreErrors) {
  ExpectInvalid(Ulysses(4, Mask::Causal(), 8, 2));  // U = 4 does not divide Hkv = 2
}

}  // namespace
}  // namespace meshplan::planner::scheme_tests
