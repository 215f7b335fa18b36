// Ring's schedule expansion (planner/schemes/ring.cc): CheckSchedule passes and every rank sends
// and receives exactly the bytes of docs/schemes.md; the step structure by hand.
#include <gtest/gtest.h>

#include "planner/schemes/registry.h"
#include "tests/planner/schemes/expansion_cases.h"

namespace meshplan::planner::scheme_tests {
namespace {

TEST(SchemeScheduleTest, Ring) {
  RunAllPasses(Make(Scheme("ring"), 1, Layout::kZigzag, Mask::Causal(), 8, 8));
  RunAllPasses(Make(Scheme("ring"), 2, Layout::kContiguous, Mask::Full(), 8, 8));
  RunAllPasses(Make(Scheme("ring"), 4, Layout::kZigzag, Mask::Causal(), 8, 2));  // GQA
  RunAllPasses(Make(Scheme("ring"), 6, Layout::kContiguous, Mask::Window(300), 4, 4));
  RunAllPasses(Make(Scheme("ring"), 8, Layout::kZigzag, UnevenDocs(), 8, 4));
  RunAllPasses(Make(Scheme("ring"), 4, Layout::kStriped, Mask::Causal(), 8, 8));
}

// One case by hand: ring, P = 4, B = 2, S = 1920, d = 8, Hkv = 2, bf16, fp32 partials.
// S/P = 480 tokens; X = 2*480*8*2 = 15360 bytes; KV = 2*2*X = 61440; forward 3*KV = 184320.
// dKVp = 2*2*2*480*8*4 = 122880; backward without cache 3*(61440 + 122880) = 552960.
TEST(SchemeScheduleTest, RingBytesByHand) {
  Case c = Make(Scheme("ring"), 4, Layout::kZigzag, Mask::Causal(), 8, 2);
  c.pass = Pass::kForwardBackward;
  Env env(c);
  auto s = Expand(*env.ctx, c.Params());
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(Summarize(*s).bytes_sent[3], 184320.0 + 552960.0);
}

// Rank r holds KV shard (r + s) mod P at step s, and receives it from r + 1.
TEST(SchemeScheduleTest, RingStepStructure) {
  Case c = Make(Scheme("ring"), 4, Layout::kContiguous, Mask::Full(), 8, 8);
  c.pass = Pass::kForward;
  Env env(c);
  auto s = Expand(*env.ctx, c.Params());
  ASSERT_TRUE(s.ok());
  for (int r = 0; r < 4; ++r) {
    int step = 0;
    for (const Op& op : s->ranks[r].ops) {
      if (op.kind == OpKind::kCompute) {
        EXPECT_EQ(op.step, step);
        EXPECT_EQ(op.kv_shard, (r + step) % 4);
        EXPECT_EQ(op.q_shard, r);
        ++step;
      } else if (op.kind == OpKind::kRecv) {
        EXPECT_EQ(op.peer, (r + 1) % 4);
      } else if (op.kind == OpKind::kSend) {
        EXPECT_EQ(op.peer, (r + 3) % 4);
      }
    }
    EXPECT_EQ(step, 4);
  }
}

// Invalid sizes are errors (kInvalidInput), not malformed schedules.
TEST(SchemeScheduleTest, RingInvalidSizesAreErrors) {
  Case ring = Make(Scheme("ring"), 4, Layout::kZigzag, Mask::Causal(), 8, 8);
  ring.seq = 1924;  // 8 zigzag chunks do not divide 1924
  ring.mask = Mask::Causal();
  ExpectInvalid(ring);
  Case wrong_grid = Make(Scheme("ring"), 4, Layout::kZigzag, Mask::Causal(), 8, 8);
  wrong_grid.r = 2;  // ring degree 2 on 4 GPUs
  ExpectInvalid(wrong_grid);
}

}  // namespace
}  // namespace meshplan::planner::scheme_tests
