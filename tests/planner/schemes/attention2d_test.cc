// ATTENTION2D's schedule expansion (planner/schemes/attention2d.cc): CheckSchedule passes and every
// rank sends and receives exactly the bytes of docs/schemes.md; the Mesh assignment of blocks;
// the checker on a 1024-rank schedule.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <utility>

#include "tests/planner/schemes/expansion_cases.h"

namespace meshplan::planner::scheme_tests {
namespace {

TEST(SchemeScheduleTest, Attention2D) {
  RunAllPasses(Tile(2, 4, Layout::kZigzag, Mask::Causal(), 8, 2));  // GQA, non-square
  RunAllPasses(Tile(4, 2, Layout::kZigzag, Mask::Causal(), 8, 2));
  RunAllPasses(Tile(2, 3, Layout::kContiguous, UnevenDocs(), 8, 8));
  RunAllPasses(Tile(3, 2, Layout::kContiguous, Mask::Window(300), 8, 8));
  RunAllPasses(Tile(1, 4, Layout::kZigzag, Mask::Full(), 8, 8));
  RunAllPasses(Tile(4, 1, Layout::kZigzag, Mask::Causal(), 8, 8));
  RunAllPasses(Tile(1, 1, Layout::kZigzag, Mask::Causal(), 8, 8));
  RunAllPasses(Tile(2, 2, Layout::kStriped, Mask::Causal(), 8, 8));
}

// Every rank computes exactly the blocks that the Mesh assignment AM[i][j] = a*floor(i/a) +
// (j mod a) gives it: a*b blocks with a full mask.
TEST(SchemeScheduleTest, Attention2DAssignment) {
  for (auto [a, b] : {std::pair<int64_t, int64_t>{2, 4}, {4, 2}, {3, 2}}) {
    Case c = Tile(a, b, Layout::kContiguous, Mask::Full(), 8, 8);
    c.pass = Pass::kForward;
    Env env(c);
    auto s = Expand(*env.ctx, c.Params());
    ASSERT_TRUE(s.ok());
    for (int64_t g = 0; g < a * b; ++g) {
      int computes = 0;
      for (const Op& op : s->ranks[g].ops) {
        if (op.kind != OpKind::kCompute) continue;
        ++computes;
        EXPECT_EQ(a * (op.q_shard / a) + op.kv_shard % a, g);
      }
      EXPECT_EQ(computes, a * b);
    }
  }
}

// The checker handles a 1024-rank schedule with ~2M ops quickly (ATTENTION2D 32 x 32 computes
// 1024 blocks per rank per pass).
TEST(SchemeScheduleTest, CheckerScalesTo1024Ranks) {
  Case c = Tile(32, 32, Layout::kZigzag, Mask::Causal(), 32, 8);
  c.seq = int64_t{1} << 20;
  c.pass = Pass::kForwardBackward;
  Env env(c);
  auto s = Expand(*env.ctx, c.Params());
  ASSERT_TRUE(s.ok());
  EXPECT_GT(s->TotalOps(), 2'000'000);
  const auto start = std::chrono::steady_clock::now();
  const Status st = CheckSchedule(*s, *env.ctx);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(st.ok()) << st.message();
  EXPECT_LT(seconds, 30.0);  // generous bound for slow CI machines; ~1 s expected
  RecordProperty("check_seconds", std::to_string(seconds));
}

// Invalid sizes are errors (kInvalidInput), not malformed schedules.
TEST(SchemeScheduleTest, Attention2DInvalidSizesAreErrors) {
  Case tile = Tile(2, 2, Layout::kZigzag, Mask::Causal(), 8, 8);
  tile.p = 8;  // 2 x 2 tile on 8 GPUs
  ExpectInvalid(tile);
}

}  // namespace
}  // namespace meshplan::planner::scheme_tests
