// USP's schedule expansion (planner/schemes/usp.cc): CheckSchedule passes and every rank sends and
// receives exactly the bytes of docs/schemes.md; the heads of every rank.
#include <gtest/gtest.h>

#include <set>
#include <tuple>

#include "planner/schemes/registry.h"
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
  // yunchang's basic and strip rings under a causal mask (issue 46).
  RunAllPasses(Usp(2, 4, Layout::kStriped, Mask::Causal(), 8, 2));
  RunAllPasses(Usp(2, 4, Layout::kContiguous, Mask::Causal(), 8, 2));
}

// What the search offers (issue 46 item 7): on a causal mask every ring layout yunchang runs
// (basic = contiguous, zigzag, strip = striped) for each U with 1 < U < P, and U = P (a ring of
// one) once, contiguous, canonical placement. P = 8, Hkv = 8: U in {2, 4, 8}.
TEST(SchemeScheduleTest, UspOffersEveryYunchangRingAndUEqualToP) {
  Case c = Usp(2, 4, Layout::kZigzag, Mask::Causal(), 8, 8);
  c.pass = Pass::kForward;  // no cache variants
  Env env(c);
  std::set<std::tuple<int64_t, int64_t, Layout>> offered;
  int64_t u_equal_p = 0;
  for (const SchemeParams& p : MakeStrategy(Scheme("usp"))->Enumerate(*env.ctx)) {
    offered.insert({p.ulysses, p.ring, p.layout});
    if (p.ring == 1) ++u_equal_p;
  }
  const std::set<std::tuple<int64_t, int64_t, Layout>> want = {
      {2, 4, Layout::kZigzag},    {2, 4, Layout::kContiguous}, {2, 4, Layout::kStriped},
      {4, 2, Layout::kZigzag},    {4, 2, Layout::kContiguous}, {4, 2, Layout::kStriped},
      {8, 1, Layout::kContiguous}};
  EXPECT_EQ(offered, want);
  EXPECT_EQ(u_equal_p, 1);
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
