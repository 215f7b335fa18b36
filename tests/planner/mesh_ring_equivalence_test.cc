// A 1 x n Mesh tile is Ring-Attention (docs/mesh-attention.md, sections 1 and 3): for the same
// layout, both plans send the same bytes per rank, run the same number of steps and have the
// same estimated time, forward and fwd+bwd, with and without the forward cache. The expected
// values below are derived by hand from the workload and from the model's per-step times.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "planner/mesh/step_costs.h"
#include "planner/schedule_check.h"
#include "planner/schemes/registry.h"
#include "planner/strategy.h"
#include "tests/planner/test_cluster.h"

namespace meshplan::planner {
namespace {

SchemeParams RingParams(int64_t n, Layout layout, bool cache) {
  SchemeParams p;
  p.scheme = Scheme("ring");
  p.layout = layout;
  p.ring = n;
  p.placement = {"cp"};
  p.cache_forward = cache;
  return p;
}

SchemeParams MeshParams(int64_t n, Layout layout, bool cache) {
  SchemeParams p;
  p.scheme = Scheme("mesh");
  p.layout = layout;
  p.tile_a = 1;
  p.tile_b = n;
  p.placement = {"q", "kv"};
  p.cache_forward = cache;
  p.reduce_chain = ReduceChain::kOwnerLast;  // Ring's chain: n-1 hops ending at the owner
  return p;
}

// The tile's step times on the plan's own placement.
mesh::StepTimes PlanStepTimes(const PlanContext& ctx, const SchemeParams& p, Phase phase) {
  return mesh::PhaseStepTimes(ctx, p, Placement(RankDims(p), p.placement), phase);
}

// Steps of a phase in a schedule: the highest Op::step of the phase, plus one.
int64_t ScheduleSteps(const Schedule& s, Phase phase) {
  int32_t last = -1;
  for (const RankProgram& prog : s.ranks) {
    for (const Op& op : prog.ops) {
      if (op.phase == phase) last = std::max(last, op.step);
    }
  }
  return last + 1;
}

TEST(MeshRingEquivalence, OneByNTileEqualsRingInBytesStepsAndTime) {
  int compared = 0;
  for (int64_t n : {2, 4, 8}) {
    const Topology topo = testing::SmallCluster(n, 1);
    for (Pass pass : {Pass::kForward, Pass::kForwardBackward}) {
      for (bool cache : {false, true}) {
        if (cache && !HasBackward(pass)) continue;
        for (Layout layout : {Layout::kZigzag, Layout::kStriped}) {
          const Workload w = testing::ComputeBoundWorkload(pass);
          ASSERT_TRUE(w.Validate().ok());
          const PlanContext ctx(w, topo);
          const SchemeParams rp = RingParams(n, layout, cache);
          const SchemeParams mp = MeshParams(n, layout, cache);
          const std::string what = "n=" + std::to_string(n) + " " + std::string(PassName(pass)) +
                                   (cache ? " cache " : " ") + std::string(LayoutName(layout));
          const auto ring = MakeStrategy(Scheme("ring"));
          const auto mesh = MakeStrategy(Scheme("mesh"));
          const Estimate re = ring->Evaluate(ctx, rp);
          const Estimate me = mesh->Evaluate(ctx, mp);
          ASSERT_TRUE(re.valid && me.valid) << what;
          auto rs = ring->Expand(ctx, rp);
          auto ms = mesh->Expand(ctx, mp);
          ASSERT_TRUE(rs.ok() && ms.ok()) << what;

          // Bytes per rank. X = (S/n) tokens x d x 2 bytes; KV = 2*Hkv*X; the fp32 dK+dV partial
          // is twice that. Ring: the forward forwards n-1 KV shards; the backward n-1 KV shards
          // again (none with cache: the forward left every shard in place) and n-1 dK+dV hops
          // (the owner-last chain of each shard visits the n-1 other ranks).
          const double tokens = static_cast<double>(w.seq_len) / static_cast<double>(n);
          const double kv =
              2.0 * static_cast<double>(w.kv_heads) * tokens * static_cast<double>(w.head_dim) * 2;
          const double dkv = 2 * kv;
          double want_bytes = static_cast<double>(n - 1) * kv;
          if (HasBackward(pass))
            want_bytes += static_cast<double>(n - 1) * ((cache ? 0.0 : kv) + dkv);
          EXPECT_DOUBLE_EQ(re.bytes_per_rank, want_bytes) << what;
          EXPECT_DOUBLE_EQ(me.bytes_per_rank, want_bytes) << what;
          for (const Schedule* s : {&*rs, &*ms}) {
            for (double sent : Summarize(*s).bytes_sent) EXPECT_NEAR(sent, want_bytes, 1.0) << what;
          }

          // Steps. Forward: n (block k at step k, the KV shift of step k delivers block k+1's
          // shard). Backward without cache: n computing steps, and the dK+dV partial of the
          // block of step n-1 leaves at step n: n+1. Backward with cache: the chain's partial
          // of column k leaves at step k (k = 1..n-1), so column k runs at step k-1 and the
          // owner's own column, never sent, runs last, at step n-1 beside the last hop: n.
          EXPECT_EQ(ScheduleSteps(*rs, Phase::kForward), n) << what;
          EXPECT_EQ(ScheduleSteps(*ms, Phase::kForward), n) << what;
          if (HasBackward(pass)) {
            const int64_t want = cache ? n : n + 1;
            EXPECT_EQ(ScheduleSteps(*rs, Phase::kBackward), want) << what;
            EXPECT_EQ(ScheduleSteps(*ms, Phase::kBackward), want) << what;
          }

          // Time. With c_f, c_b the forward/backward block and t_kv, t_dkv the messages of one
          // hop, compute-bound means c_f >= t_kv and c_b >= t_kv + t_dkv (checked). Then the
          // forward is n blocks; the backward n blocks plus, without cache, the last dK+dV hop
          // after the last block (with cache it overlaps the own block). The two estimates model
          // the same steps, so they must agree to rounding (1e-9 relative).
          const mesh::StepTimes fwd = PlanStepTimes(ctx, mp, Phase::kForward);
          const mesh::StepTimes bwd = PlanStepTimes(ctx, mp, Phase::kBackward);
          const mesh::StepTimes bwd_uncached =
              PlanStepTimes(ctx, MeshParams(n, layout, false), Phase::kBackward);
          ASSERT_GE(fwd.block, fwd.kv_shift) << what;
          ASSERT_GE(bwd.block, bwd_uncached.kv_shift + bwd.kv_partial) << what;
          const double nd = static_cast<double>(n);
          double want_s = nd * fwd.block;
          // The backward also merges each incoming dK+dV partial on the compute stream, n - 1 of
          // them, each a launch and three passes of the partial over HBM (PartialMergeSeconds).
          const double merge_s = topo.gpu.launch_overhead_s + 3.0 * dkv / topo.gpu.hbm_bytes_per_s;
          if (HasBackward(pass)) {
            want_s += nd * bwd.block + (cache ? 0.0 : bwd.kv_partial) +
                      static_cast<double>(n - 1) * merge_s;
          }
          EXPECT_NEAR(me.time_s, want_s, 1e-9 * want_s) << what;
          EXPECT_NEAR(re.time_s, want_s, 1e-9 * want_s) << what;
          ++compared;
        }
      }
    }
  }
  EXPECT_EQ(compared, 3 * 3 * 2);
}

// The case: a long dK+dV chain with nothing but cached blocks to overlap. Before chain
// pacing the cached backward computed n-1 blocks in its first step and then ran the chain's
// hops with one block left to hide them: (n-2) hops exposed. Now hop k overlaps block k+1 and
// the last hop the owner's block (owner-last): nothing exposed; owner-first sends the owner's
// column first and the total comes back after the last block: at most one hop exposed.
TEST(MeshRingEquivalence, CachedBackwardChainOverlapsTheBlocks) {
  const int64_t n = 8;
  const Topology topo = testing::SmallCluster(n, 1);
  const Workload w = testing::ComputeBoundWorkload(Pass::kBackward);
  const PlanContext ctx(w, topo);
  for (ReduceChain chain : {ReduceChain::kOwnerLast, ReduceChain::kOwnerFirst}) {
    SchemeParams p = MeshParams(n, Layout::kZigzag, /*cache=*/true);
    p.reduce_chain = chain;
    const Estimate e = MakeStrategy(Scheme("mesh"))->Evaluate(ctx, p);
    ASSERT_TRUE(e.valid);
    const mesh::StepTimes t = PlanStepTimes(ctx, p, Phase::kBackward);
    ASSERT_GE(t.block, t.kv_partial);
    const double hop = chain == ReduceChain::kOwnerLast ? 0.0 : t.kv_partial;
    EXPECT_NEAR(e.exposed_comm_s, hop, 1e-12) << static_cast<int>(chain);
    // Beside the blocks, each incoming dK+dV partial is merged on the compute stream, one per hop
    // of the chain (n - 1 owner-last; n owner-first, whose total comes back to the owner): a
    // launch and three passes over HBM of the fp32 dK+dV of S/n tokens (2 x Hkv x d x 4 bytes a
    // token) each.
    const double dkv = 2.0 * static_cast<double>(w.kv_heads) * static_cast<double>(w.head_dim) *
                       4.0 * static_cast<double>(w.seq_len) / static_cast<double>(n);
    const int64_t hops = chain == ReduceChain::kOwnerLast ? n - 1 : n;
    const double merges = static_cast<double>(hops) *
                          (topo.gpu.launch_overhead_s + 3.0 * dkv / topo.gpu.hbm_bytes_per_s);
    EXPECT_NEAR(e.time_s, static_cast<double>(n) * t.block + hop + merges, 1e-9 * e.time_s)
        << static_cast<int>(chain);
  }
}

}  // namespace
}  // namespace meshplan::planner
