// LoongTrain (planner/schemes/loongtrain.cc): the schedule expansion passes CheckSchedule and
// sends exactly the bytes of docs/schemes.md, crosses windows W-1 times per ring pass; the
// window rule as enumeration, validity and expansion read it.
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>
#include <tuple>

#include "planner/schemes/registry.h"
#include "tests/planner/schemes/expansion_cases.h"

namespace meshplan::planner::scheme_tests {
namespace {

TEST(SchemeScheduleTest, LoongTrain) {
  RunAllPasses(Loong(2, 4, 2, Layout::kZigzag, Mask::Causal(), 8, 2));  // GQA, 2 windows of 2
  RunAllPasses(Loong(1, 8, 2, Layout::kZigzag, UnevenDocs(), 8, 8));    // 4 windows
  RunAllPasses(Loong(1, 6, 3, Layout::kContiguous, Mask::Full(), 4, 4));
  RunAllPasses(Loong(2, 2, 1, Layout::kZigzag, Mask::Causal(), 8, 8));     // outer ring only
  RunAllPasses(Loong(1, 4, 4, Layout::kZigzag, Mask::Window(300), 8, 8));  // one window
  RunAllPasses(Loong(1, 1, 1, Layout::kZigzag, Mask::Causal(), 8, 8));
}

// LoongTrain: of the cp-1 KV hops and cp-1 dK+dV hops of a ring pass, exactly W-1 = cp/w - 1
// cross windows. Rank g has ring rank rho = g / hp and window rho / w.
TEST(SchemeScheduleTest, LoongTrainCrossWindowHops) {
  for (auto [hp, cp, w] :
       {std::tuple<int64_t, int64_t, int64_t>{2, 4, 2}, {1, 8, 2}, {1, 6, 3}, {1, 4, 1}}) {
    Case c = Loong(hp, cp, w, Layout::kZigzag, Mask::Causal(), 8, 8);
    c.pass = Pass::kBackward;  // no cache: KV hops and dKV hops
    Env env(c);
    auto s = Expand(*env.ctx, c.Params());
    ASSERT_TRUE(s.ok()) << s.status().message();
    auto window = [&](int64_t g) { return (g / hp) / w; };
    for (int64_t g = 0; g < hp * cp; ++g) {
      int kv_cross = 0, kv_inner = 0, dkv_cross = 0, dkv_inner = 0;
      for (const Op& op : s->ranks[g].ops) {
        if (op.kind != OpKind::kSend) continue;
        const bool cross = window(op.peer) != window(g);
        if (op.tensors == kTensorKV) (cross ? kv_cross : kv_inner)++;
        if (op.tensors == kTensorDKV) (cross ? dkv_cross : dkv_inner)++;
      }
      const int64_t nw = cp / w;
      EXPECT_EQ(kv_cross, nw - 1) << "rank " << g;
      EXPECT_EQ(kv_inner, cp - nw) << "rank " << g;
      EXPECT_EQ(dkv_cross, nw - 1) << "rank " << g;
      EXPECT_EQ(dkv_inner, cp - nw) << "rank " << g;
    }
  }
}

// Invalid sizes are errors (kInvalidInput), not malformed schedules.
TEST(SchemeScheduleTest, LoongTrainInvalidSizesAreErrors) {
  // w = 4 does not divide cp = 6.
  ExpectInvalid(Loong(1, 6, 4, Layout::kZigzag, Mask::Causal(), 8, 8));
}

// The window rule (w >= 1 divides cp; w = 1 or w = cp is a plain ring): the search offers only
// double rings proper, Evaluate gives the reason for the others, Expand builds plain-ring
// windows but refuses one that does not divide cp.
TEST(SchemeScheduleTest, LoongTrainWindowRule) {
  const Case eight = Loong(1, 8, 2, Layout::kZigzag, Mask::Causal(), 8, 8);  // P = 8, Hkv = 8
  Env env(eight);
  const std::unique_ptr<Strategy> strategy = MakeStrategy(Scheme("loongtrain"));
  // hp in {1, 2, 4, 8} (all divide Hkv = 8), cp = 8 / hp; windows dividing cp with 1 < w <= cp
  // (issue 46: w = cp is one window spanning the ring, as InternEvo runs it), and cp = 1's single
  // window (hp = 8, InternEvo's plain ISP): cp = 8: w = 2, 4, 8; cp = 4: w = 2, 4; cp = 2: w = 2;
  // cp = 1: w = 1.
  std::set<std::tuple<int64_t, int64_t, int64_t>> offered;
  for (const SchemeParams& p : strategy->Enumerate(*env.ctx)) {
    offered.insert({p.ulysses, p.ring, p.window});
  }
  const std::set<std::tuple<int64_t, int64_t, int64_t>> want = {
      {1, 8, 2}, {1, 8, 4}, {1, 8, 8}, {2, 4, 2}, {2, 4, 4}, {4, 2, 2}, {8, 1, 1}};
  EXPECT_EQ(offered, want);

  auto evaluate = [&](int64_t hp, int64_t cp, int64_t w) {
    SchemeParams p = Loong(hp, cp, w, Layout::kZigzag, Mask::Causal(), 8, 8).Params();
    p.placement = CanonicalPlacement(planner::RankDims(p));
    return strategy->Evaluate(*env.ctx, p);
  };
  auto reason = [&](int64_t hp, int64_t cp, int64_t w) {
    const Estimate e = evaluate(hp, cp, w);
    EXPECT_FALSE(e.valid);
    return e.reason;
  };
  EXPECT_EQ(reason(1, 8, 1),
            "w = 1 is one ring over the windows; give it as w = cp (8), one window spanning the "
            "ring");
  // One window spanning the ring is USP's single ring: the same time as USP U=1 R=8 zigzag on
  // the same GPUs (the usp scheme does not offer U = 1, so Evaluate it directly).
  const Estimate one_ring = evaluate(1, 8, 8);
  ASSERT_TRUE(one_ring.valid) << one_ring.reason;
  SchemeParams usp;
  usp.scheme = Scheme("usp");
  usp.layout = Layout::kZigzag;
  usp.ulysses = 1;
  usp.ring = 8;
  usp.placement = CanonicalPlacement(planner::RankDims(usp));
  const Estimate usp_ring = MakeStrategy(Scheme("usp"))->Evaluate(*env.ctx, usp);
  ASSERT_TRUE(usp_ring.valid) << usp_ring.reason;
  EXPECT_DOUBLE_EQ(one_ring.time_s, usp_ring.time_s);
  EXPECT_EQ(reason(1, 8, 3), "window 3 must divide cp = 8");
  EXPECT_EQ(reason(1, 8, 0), "window 0 must divide cp = 8");

  Case one_window = Loong(1, 8, 8, Layout::kZigzag, Mask::Causal(), 8, 8);
  EXPECT_TRUE(Expand(*env.ctx, one_window.Params()).ok());
  Case three = Loong(1, 8, 3, Layout::kZigzag, Mask::Causal(), 8, 8);
  const auto refused = Expand(*env.ctx, three.Params());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message(), "loongtrain window 3 does not divide cp 8");
}

}  // namespace
}  // namespace meshplan::planner::scheme_tests
