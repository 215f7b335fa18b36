// Mesh-Attention greedy step schedule: the paper's step table (ALGORITHMS.md, n = 9, a = b = 3,
// rank 3) and the schedule invariants of planner/mesh/greedy.h for many shapes and costs.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "planner/mesh/greedy.h"

namespace meshplan::planner::mesh {
namespace {

using Blocks = std::vector<std::pair<int, int>>;

Blocks ComputeOf(const MeshStep& s) {
  Blocks out;
  for (const LocalBlock& b : s.compute) out.emplace_back(b.q, b.kv);
  return out;
}

// Golden table. Rank 3's slots: Q#0..2 = Q3, Q4, Q5; KV#0..2 = KV3, KV6, KV0.
//   step 0: Q3-KV3 (0,0); shift KV -> KV#1 (KV6)
//   step 1: Q3-KV6 (0,1); shift KV -> KV#2 (KV0)
//   step 2: Q3-KV0 (0,2); shift Q -> Q#1 (Q4)
//   step 3: Q4 x all (1,*); send O of slot 0 (O3, owner-first only); shift Q -> Q#2 (Q5)
//   step 4: Q5 x all (2,*); send slot 1 (O4)
//   step 5: send slot 2 (O5)
void ExpectGolden(ReduceChain chain) {
  GreedyOptions o;
  o.a = 3;
  o.b = 3;
  o.phase = Phase::kForward;
  o.chain = chain;
  const std::vector<MeshStep> steps = GreedySchedule(o);
  ASSERT_EQ(steps.size(), 6u);
  const bool first = chain == ReduceChain::kOwnerFirst;
  EXPECT_EQ(ComputeOf(steps[0]), (Blocks{{0, 0}}));
  EXPECT_EQ(steps[0].shift, ShiftKind::kKV);
  EXPECT_EQ(steps[0].shift_slot, 1);
  EXPECT_EQ(ComputeOf(steps[1]), (Blocks{{0, 1}}));
  EXPECT_EQ(steps[1].shift, ShiftKind::kKV);
  EXPECT_EQ(steps[1].shift_slot, 2);
  EXPECT_EQ(ComputeOf(steps[2]), (Blocks{{0, 2}}));
  EXPECT_EQ(steps[2].shift, ShiftKind::kQ);
  EXPECT_EQ(steps[2].shift_slot, 1);
  EXPECT_EQ(ComputeOf(steps[3]), (Blocks{{1, 0}, {1, 1}, {1, 2}}));
  EXPECT_EQ(steps[3].shift, ShiftKind::kQ);
  EXPECT_EQ(steps[3].shift_slot, 2);
  EXPECT_EQ(ComputeOf(steps[4]), (Blocks{{2, 0}, {2, 1}, {2, 2}}));
  EXPECT_EQ(steps[4].shift, ShiftKind::kNone);
  EXPECT_TRUE(steps[5].compute.empty());
  EXPECT_EQ(steps[5].shift, ShiftKind::kNone);
  for (int s = 0; s < 3; ++s) EXPECT_TRUE(steps[s].q_partial_sends.empty()) << s;
  EXPECT_EQ(steps[3].q_partial_sends, first ? std::vector<int32_t>{0} : std::vector<int32_t>{});
  EXPECT_EQ(steps[4].q_partial_sends, std::vector<int32_t>{1});
  EXPECT_EQ(steps[5].q_partial_sends, std::vector<int32_t>{2});
  for (const MeshStep& s : steps) EXPECT_TRUE(s.kv_partial_sends.empty());
}

TEST(MeshGreedy, GoldenStepTableOwnerFirst) { ExpectGolden(ReduceChain::kOwnerFirst); }
TEST(MeshGreedy, GoldenStepTableOwnerLast) { ExpectGolden(ReduceChain::kOwnerLast); }

// Checks every invariant of greedy.h on one schedule.
void CheckInvariants(const GreedyOptions& o, const std::vector<MeshStep>& steps) {
  const int a = static_cast<int>(o.a), b = static_cast<int>(o.b);
  const bool bwd = o.phase == Phase::kBackward;
  const bool owner_first = o.chain == ReduceChain::kOwnerFirst;
  constexpr int kNot = 1 << 30;
  std::vector<int> q_ready(a, kNot), kv_ready(b, kNot);
  q_ready[0] = 0;
  kv_ready[0] = 0;
  if (o.kv_present) kv_ready.assign(b, 0);
  std::vector<int> done(a * b, kNot), q_sent(a, kNot), kv_sent(b, kNot);
  int next_q = 1, next_kv = o.kv_present ? b : 1;
  std::vector<int> q_order, kv_order;  // slots in send order
  ASSERT_LT(steps.size(), 200u);
  for (int s = 0; s < static_cast<int>(steps.size()); ++s) {
    const MeshStep& st = steps[s];
    // Shifts in ring order, one per step.
    if (st.shift == ShiftKind::kQ) {
      ASSERT_EQ(st.shift_slot, next_q) << "step " << s;
      q_ready[next_q++] = s + 1;
    } else if (st.shift == ShiftKind::kKV) {
      ASSERT_FALSE(o.kv_present);
      ASSERT_EQ(st.shift_slot, next_kv) << "step " << s;
      kv_ready[next_kv++] = s + 1;
    }
    // Partial sends: the line's blocks are computed in earlier steps and the incoming partial
    // (the neighbour's send of slot k-1 in an earlier step) is there, except for the chain's first.
    for (int k : st.q_partial_sends) {
      for (int l = 0; l < b; ++l) ASSERT_LT(done[k * b + l], s) << "row " << k << " step " << s;
      if (k != (owner_first ? 0 : 1)) {
        ASSERT_LT(q_sent[k - 1], s) << "row " << k;
      }
      q_sent[k] = s;
      q_order.push_back(k);
    }
    for (int l : st.kv_partial_sends) {
      for (int k = 0; k < a; ++k) ASSERT_LT(done[k * b + l], s) << "col " << l << " step " << s;
      if (l != (owner_first ? 0 : 1)) {
        ASSERT_LT(kv_sent[l - 1], s) << "col " << l;
      }
      kv_sent[l] = s;
      kv_order.push_back(l);
    }
    for (const LocalBlock& blk : st.compute) {
      ASSERT_LE(q_ready[blk.q], s) << "Q#" << blk.q << " not delivered at step " << s;
      ASSERT_LE(kv_ready[blk.kv], s) << "KV#" << blk.kv << " not delivered at step " << s;
      ASSERT_EQ(done[blk.q * b + blk.kv], kNot) << "block computed twice";
      done[blk.q * b + blk.kv] = s;
    }
  }
  EXPECT_EQ(next_q, a);
  EXPECT_EQ(next_kv, b);
  for (int i = 0; i < a * b; ++i) EXPECT_NE(done[i], kNot) << "block " << i << " never computed";
  // Chain hops per rank: a-1 (owner-last) or a (owner-first) when a >= 2, 0 when a == 1.
  std::vector<int> want_q, want_kv;
  if (a >= 2) {
    for (int k = owner_first ? 0 : 1; k < a; ++k) want_q.push_back(k);
  }
  if (bwd && b >= 2) {
    for (int l = owner_first ? 0 : 1; l < b; ++l) want_kv.push_back(l);
  }
  EXPECT_EQ(q_order, want_q);
  EXPECT_EQ(kv_order, want_kv);
  // No trailing empty step.
  ASSERT_FALSE(steps.empty());
  const MeshStep& last = steps.back();
  EXPECT_TRUE(!last.compute.empty() || last.shift != ShiftKind::kNone ||
              !last.q_partial_sends.empty() || !last.kv_partial_sends.empty());
}

struct CostCase {
  const char* name;
  StepCosts costs;
};

const CostCase kCosts[] = {
    {"unit", {}},
    {"slow_shifts", {1, 3, 2.5, 1.5, 2}},
    {"fast_shifts", {1, 0.2, 0.3, 0.1, 0.4}},
    {"kv_heavy", {1, 0.5, 4, 0.7, 8}},
    {"q_heavy", {1, 4, 0.5, 8, 0.7}},
};

TEST(MeshGreedy, InvariantsForManyShapes) {
  for (int a = 1; a <= 6; ++a) {
    for (int b = 1; b <= 6; ++b) {
      for (const CostCase& c : kCosts) {
        for (ReduceChain chain : {ReduceChain::kOwnerLast, ReduceChain::kOwnerFirst}) {
          for (int variant = 0; variant < 3; ++variant) {  // fwd, bwd, bwd with KV cached
            GreedyOptions o;
            o.a = a;
            o.b = b;
            o.chain = chain;
            o.costs = c.costs;
            o.phase = variant == 0 ? Phase::kForward : Phase::kBackward;
            o.kv_present = variant == 2;
            SCOPED_TRACE("a=" + std::to_string(a) + " b=" + std::to_string(b) + " costs=" + c.name +
                         " chain=" + std::to_string(static_cast<int>(chain)) +
                         " variant=" + std::to_string(variant));
            CheckInvariants(o, GreedySchedule(o));
          }
        }
      }
    }
  }
}

TEST(MeshGreedy, UnitCostForwardTakesAPlusBSteps) {
  // Rows primary => all b-1 KV shifts first (row 0 finishes at step b-1), then one Q shift per
  // step; row k is computed at step b-1+k, so row a-1 at a+b-2 and its partial leaves at a+b-1
  // (the chain's incoming partial left one step earlier): a+b steps for both chain variants.
  for (int a = 2; a <= 6; ++a) {
    for (int b = 2; b <= 6; ++b) {
      for (ReduceChain chain : {ReduceChain::kOwnerLast, ReduceChain::kOwnerFirst}) {
        GreedyOptions o;
        o.a = a;
        o.b = b;
        o.chain = chain;
        EXPECT_EQ(GreedySchedule(o).size(), static_cast<size_t>(a + b)) << a << "x" << b;
      }
    }
  }
}

TEST(MeshGreedy, RingIsOneBlockPerStep) {
  // a = 1 is Ring-Attention: KV#s arrives for step s, one block per step, no partials forward.
  GreedyOptions o;
  o.a = 1;
  o.b = 5;
  const std::vector<MeshStep> steps = GreedySchedule(o);
  ASSERT_EQ(steps.size(), 5u);
  for (int s = 0; s < 5; ++s) {
    EXPECT_EQ(ComputeOf(steps[s]), (Blocks{{0, s}}));
    EXPECT_EQ(steps[s].shift, s < 4 ? ShiftKind::kKV : ShiftKind::kNone);
  }
}

TEST(MeshGreedy, BackwardPrimaryFollowsChainCost) {
  // Backward, a = 2, b = 4, owner-last: Q chain a-1 = 1 hop, KV chain b-1 = 3 hops. With equal
  // partial costs 1*1 < 1*3, so the columns are primary: a Q shift unlocks block (1, 0) in column
  // 0, a KV shift only column 1, so the Q shift goes first.
  GreedyOptions o;
  o.a = 2;
  o.b = 4;
  o.phase = Phase::kBackward;
  std::vector<MeshStep> steps = GreedySchedule(o);
  ASSERT_FALSE(steps.empty());
  EXPECT_EQ(steps[0].shift, ShiftKind::kQ);
  // A Q-side partial 4x dearer (4*1 >= 1*3) makes the rows primary: a KV shift unlocks (0, 1)
  // in row 0, a Q shift only row 1, so the KV shift goes first.
  o.costs.q_partial = 4;
  steps = GreedySchedule(o);
  EXPECT_EQ(steps[0].shift, ShiftKind::kKV);
}

// Hold-back. Backward, a = 1, b = 2, KV cached: no shifts at all; both blocks are usable at step 0.
TEST(MeshGreedy, HoldBackOverlapsComputeWithPartialSendOwnerLast) {
  // Owner-last: only column 1's dK+dV is sent. Computing both blocks at step 0 would leave step 1
  // with the send and no compute; block (0,1) gates that send (never held), block (0,0) does not
  // (column 0 stays at its owner), so (0,0) is held back to step 1 to hide the send.
  GreedyOptions o;
  o.a = 1;
  o.b = 2;
  o.phase = Phase::kBackward;
  o.kv_present = true;
  const std::vector<MeshStep> steps = GreedySchedule(o);
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(ComputeOf(steps[0]), (Blocks{{0, 1}}));
  EXPECT_TRUE(steps[0].kv_partial_sends.empty());
  EXPECT_EQ(ComputeOf(steps[1]), (Blocks{{0, 0}}));
  EXPECT_EQ(steps[1].kv_partial_sends, std::vector<int32_t>{1});
}

TEST(MeshGreedy, HoldBackOverlapsComputeWithPartialSendOwnerFirst) {
  // Owner-first: column 0 is sent first (step 1 at the earliest), so (0,0) gates it; column 1's
  // send needs column 0's partial merged first (step 2), so (0,1) is held to step 1. Step 2 sends
  // column 1: the same 3 steps as without holding, with step 1's send hidden behind (0,1).
  GreedyOptions o;
  o.a = 1;
  o.b = 2;
  o.phase = Phase::kBackward;
  o.kv_present = true;
  o.chain = ReduceChain::kOwnerFirst;
  const std::vector<MeshStep> steps = GreedySchedule(o);
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(ComputeOf(steps[0]), (Blocks{{0, 0}}));
  EXPECT_EQ(ComputeOf(steps[1]), (Blocks{{0, 1}}));
  EXPECT_EQ(steps[1].kv_partial_sends, std::vector<int32_t>{0});
  EXPECT_TRUE(steps[2].compute.empty());
  EXPECT_EQ(steps[2].kv_partial_sends, std::vector<int32_t>{1});
}

TEST(MeshGreedy, NoHoldBackWhenTheSendIsFree) {
  // Same as above with free partial sends: nothing to hide, both blocks at step 0. They run in
  // chain order: owner-last sends column 1 first and keeps column 0 (the owner's) for last.
  GreedyOptions o;
  o.a = 1;
  o.b = 2;
  o.phase = Phase::kBackward;
  o.kv_present = true;
  o.costs.kv_partial = 0;
  const std::vector<MeshStep> steps = GreedySchedule(o);
  ASSERT_FALSE(steps.empty());
  EXPECT_EQ(ComputeOf(steps[0]), (Blocks{{0, 1}, {0, 0}}));
}

// Communication of the step table left uncovered by the step's computation, in cost units: each
// step lasts max(compute, comm), with the Q- and KV-side messages added (the greedy's own view).
double Exposed(const std::vector<MeshStep>& steps, const StepCosts& c) {
  double exposed = 0;
  for (const MeshStep& st : steps) {
    double comm = st.shift == ShiftKind::kQ    ? c.q_shift
                  : st.shift == ShiftKind::kKV ? c.kv_shift
                                               : 0.0;
    comm += static_cast<double>(st.q_partial_sends.size()) * c.q_partial +
            static_cast<double>(st.kv_partial_sends.size()) * c.kv_partial;
    exposed += std::max(0.0, comm - static_cast<double>(st.compute.size()) * c.block);
  }
  return exposed;
}

// Chain pacing, a = 1, b = n, KV cached, owner-last (Ring with cache): column k >= 1's dK+dV
// partial can leave at step k at the earliest (the chain starts with column 1 at step 1 and
// moves one hop per step), so column k is computed at step k-1, just in time; the owner's own
// column 0 is never sent and fills step n-1, beside the last hop. At step s the chain still has
// n-1-s sends to hide, so every block that is not due is held. Table:
//   step 0:            compute (0,1)
//   step k, 1..n-2:    send column k, compute (0,k+1)
//   step n-1:          send column n-1, compute (0,0)
// n steps, each hop beside one block: nothing exposed while a hop costs at most a block. Before
// pacing, step 0 computed n-1 blocks and steps 2..n-1 were sends alone: (n-2) hops exposed.
TEST(MeshGreedy, CachedRingChainIsPacedOneBlockPerHop) {
  for (int n = 2; n <= 12; ++n) {
    GreedyOptions o;
    o.a = 1;
    o.b = n;
    o.phase = Phase::kBackward;
    o.kv_present = true;
    o.costs.kv_partial = 0.5;
    const std::vector<MeshStep> steps = GreedySchedule(o);
    ASSERT_EQ(steps.size(), static_cast<size_t>(n)) << n;
    for (int s = 0; s < n; ++s) {
      const int col = s + 1 < n ? s + 1 : 0;
      EXPECT_EQ(ComputeOf(steps[s]), (Blocks{{0, col}})) << "n=" << n << " step " << s;
      EXPECT_EQ(steps[s].kv_partial_sends,
                s == 0 ? std::vector<int32_t>{} : std::vector<int32_t>{s})
          << "n=" << n << " step " << s;
    }
    EXPECT_DOUBLE_EQ(Exposed(steps, o.costs), 0.0) << n;
  }
}

// Owner-first sends the owner's column first: column k leaves at step k+1 at the earliest, so
// it runs at step k (the same order as the slots), and the last send, column n-1 at step n,
// has nothing left to overlap: n+1 steps and exactly one hop exposed, whatever n.
TEST(MeshGreedy, CachedRingChainOwnerFirstExposesOneHop) {
  for (int n = 2; n <= 12; ++n) {
    GreedyOptions o;
    o.a = 1;
    o.b = n;
    o.phase = Phase::kBackward;
    o.kv_present = true;
    o.chain = ReduceChain::kOwnerFirst;
    o.costs.kv_partial = 0.5;
    const std::vector<MeshStep> steps = GreedySchedule(o);
    ASSERT_EQ(steps.size(), static_cast<size_t>(n + 1)) << n;
    for (int s = 0; s < n; ++s)
      EXPECT_EQ(ComputeOf(steps[s]), (Blocks{{0, s}})) << "n=" << n << " step " << s;
    EXPECT_TRUE(steps[n].compute.empty());
    EXPECT_DOUBLE_EQ(Exposed(steps, o.costs), 0.5) << n;
  }
}

// A hop dearer than a block (comm-bound, 2.5 blocks), n = 8, owner-last. The 8 blocks cannot
// hide the 7 hops (17.5 units), so no step takes more blocks than its hop lasts, rounded down
// (2): a block hides one unit wherever it runs, and a third block beside a 2.5-unit hop would
// hide only half a unit. Column 1 must run at step 0 (its partial leaves at step 1), so at most
// 7 blocks sit beside hops and any order leaves at least 17.5 - 7 = 10.5 units exposed; the
// greedy reaches that bound, and its time, 1 + 7 * 2.5 = 18.5, is Ring's c + (n-1)*max(c, d).
//   step 0: compute column 1          step 1: send 1, compute 2, 3 (2 is due at step 2)
//   step 2: send 2, compute 4, 5      step 3: send 3, compute 6, 7
//   step 4: send 4, compute 0 (the owner's column, last in chain order)
//   steps 5..7: send 5..7
TEST(MeshGreedy, CachedRingChainSpreadsBlocksWhenCommBound) {
  GreedyOptions o;
  o.a = 1;
  o.b = 8;
  o.phase = Phase::kBackward;
  o.kv_present = true;
  o.costs.kv_partial = 2.5;
  const std::vector<MeshStep> steps = GreedySchedule(o);
  ASSERT_EQ(steps.size(), 8u);
  EXPECT_EQ(ComputeOf(steps[0]), (Blocks{{0, 1}}));
  EXPECT_EQ(ComputeOf(steps[1]), (Blocks{{0, 2}, {0, 3}}));
  EXPECT_EQ(ComputeOf(steps[2]), (Blocks{{0, 4}, {0, 5}}));
  EXPECT_EQ(ComputeOf(steps[3]), (Blocks{{0, 6}, {0, 7}}));
  EXPECT_EQ(ComputeOf(steps[4]), (Blocks{{0, 0}}));
  for (int s = 5; s < 8; ++s) EXPECT_TRUE(steps[s].compute.empty()) << s;
  for (int s = 1; s < 8; ++s) EXPECT_EQ(steps[s].kv_partial_sends, std::vector<int32_t>{s}) << s;
  EXPECT_DOUBLE_EQ(Exposed(steps, o.costs), 10.5);
}

}  // namespace
}  // namespace meshplan::planner::mesh
