// USP's schedule expansion (planner/schemes/usp.cc): CheckSchedule passes and every rank sends and
// receives exactly the bytes of docs/schemes.md; the heads of every rank.
#include <gtest/gtest.h>

#include "tests/planner/schemes/expansion_cases.h"

namespace meshplan::planner::scheme_tests {
namespace {

TEST(SchemeScheduleTest, Usp) {
  RunAllPasses(Usp(2, 3, Layout::kZigzag, Mask::Causal(), 8, 2));  // non-square, GQA
  RunAllPasses(Usp(3, 2, Layout::kZigzag, Mask::Causal(), 6, 3));
  RunAllPasses(Usp(2, 2, Layout::kContiguous, UnevenDocs(), 8, 8));
  RunAllPasses(Usp(1, 4, Layout::kZigzag, Mask::Causal(), 8, 8));  // pure ring
  RunAllPasses(Usp(4, 1, Layout::kZigzag, Mask::Full(), 8, 4));    // pure Ulysses
  RunAllPasses(Usp(2, 4, Layout::kContiguous, Mask::Window(250), 8, 2));
}

// USP: rank g = u + U*rho computes heads [u*Hq/U, (u+1)*Hq/U) of Q shard rho.
TEST(SchemeScheduleTest, UspHeads) {
  Case c = Usp(2, 3, Layout::kZigzag, Mask::Causal(), 8, 2);
  c.pass = Pass::kForward;
  Env env(c);
  auto s = Expand(*env.ctx, c.Params());
  ASSERT_TRUE(s.ok());
  for (int64_t g = 0; g < 6; ++g) {
    for (const Op& op : s->ranks[g].ops) {
      if (op.kind != OpKind::kCompute) continue;
      EXPECT_EQ(op.head_begin, (g % 2) * 4);
      EXPECT_EQ(op.head_count, 4);
      EXPECT_EQ(op.q_shard, g / 2);
    }
  }
}

}  // namespace
}  // namespace meshplan::planner::scheme_tests
