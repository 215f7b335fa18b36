// ATTENTION2D-O (planner/schemes/attention2d_o.cc): its schedule passes CheckSchedule and
// moves exactly ATTENTION2D's bytes (docs/schemes.md); it computes ATTENTION2D's blocks; with one
// tile row it is Ring-Attention; its estimate is derived by hand on small clusters and is never
// above ATTENTION2D's for the same plan.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "planner/schemes/registry.h"
#include "tests/planner/schemes/expansion_cases.h"
#include "tests/planner/test_cluster.h"

namespace meshplan::planner::scheme_tests {
namespace {

TEST(SchemeScheduleTest, Attention2DOverlap) {
  RunAllPasses(TileOverlap(2, 4, Layout::kZigzag, Mask::Causal(), 8, 2));  // GQA, non-square
  RunAllPasses(TileOverlap(4, 2, Layout::kZigzag, Mask::Causal(), 8, 2));
  Case nine = TileOverlap(3, 3, Layout::kZigzag, Mask::Causal(), 8, 8);  // a middle row
  nine.seq = 2016;  // 18 zigzag chunks divide it
  RunAllPasses(nine);
  RunAllPasses(TileOverlap(2, 3, Layout::kContiguous, UnevenDocs(), 8, 8));
  RunAllPasses(TileOverlap(3, 2, Layout::kContiguous, Mask::Window(300), 8, 8));
  RunAllPasses(TileOverlap(4, 4, Layout::kContiguous, Mask::Causal(), 8, 8));  // empty blocks
  RunAllPasses(TileOverlap(1, 4, Layout::kZigzag, Mask::Full(), 8, 8));
  RunAllPasses(TileOverlap(4, 1, Layout::kZigzag, Mask::Causal(), 8, 8));
  RunAllPasses(TileOverlap(1, 1, Layout::kZigzag, Mask::Causal(), 8, 8));
  RunAllPasses(TileOverlap(2, 2, Layout::kStriped, Mask::Causal(), 8, 8));
}

// The (q, kv) blocks of every rank, per phase, as a set.
std::vector<std::set<std::tuple<int, int32_t, int32_t>>> RankBlockSets(const Schedule& s) {
  std::vector<std::set<std::tuple<int, int32_t, int32_t>>> out(s.ranks.size());
  for (size_t r = 0; r < s.ranks.size(); ++r) {
    for (const Op& op : s.ranks[r].ops) {
      if (op.kind == OpKind::kCompute)
        out[r].insert({static_cast<int>(op.phase), op.q_shard, op.kv_shard});
    }
  }
  return out;
}

// Every rank computes exactly ATTENTION2D's blocks (the Mesh assignment), only in another order.
TEST(SchemeScheduleTest, Attention2DOverlapComputesAttention2DBlocks) {
  for (auto [a, b] : {std::pair<int64_t, int64_t>{2, 4}, {4, 2}, {3, 2}, {3, 3}}) {
    Case plain = Tile(a, b, Layout::kZigzag, Mask::Causal(), 8, 8);
    plain.seq = 2016;  // divisible by 2P for P = 6, 8, 9
    Case overlap = TileOverlap(a, b, Layout::kZigzag, Mask::Causal(), 8, 8);
    overlap.seq = plain.seq;
    Env env(plain);
    auto ps = Expand(*env.ctx, plain.Params());
    auto os = Expand(*env.ctx, overlap.Params());
    ASSERT_TRUE(ps.ok() && os.ok());
    EXPECT_EQ(RankBlockSets(*ps), RankBlockSets(*os)) << a << " x " << b;
  }
}

// Row k of rank g = x + a*y is Q slot k: shard a*y + (x+k) mod a, and within a row the KV slots
// run in ring order (g + l*a) mod P. Case a = 3, b = 2, rank 4 (x = 1, y = 1): rows Q4, Q5, Q3,
// columns KV4, KV1 (4 + 3 = 7 = 1 mod 6): forward blocks (4,4) (4,1) (5,4) (5,1) (3,4) (3,1).
TEST(SchemeScheduleTest, Attention2DOverlapRowOrder) {
  Case c = TileOverlap(3, 2, Layout::kContiguous, Mask::Full(), 8, 8);
  c.pass = Pass::kForward;
  Env env(c);
  auto s = Expand(*env.ctx, c.Params());
  ASSERT_TRUE(s.ok());
  std::vector<std::pair<int32_t, int32_t>> order;
  for (const Op& op : s->ranks[4].ops) {
    if (op.kind == OpKind::kCompute) order.emplace_back(op.q_shard, op.kv_shard);
  }
  const std::vector<std::pair<int32_t, int32_t>> want = {{4, 4}, {4, 1}, {5, 4},
                                                         {5, 1}, {3, 4}, {3, 1}};
  EXPECT_EQ(order, want);
}

// With a = 1 the tile is one row: ATTENTION2D-O is Ring-Attention over the KV group (all P ranks):
// the same messages between the same ranks in the same order, and the same blocks in the same
// order, as Ring's schedule.
TEST(SchemeScheduleTest, Attention2DOverlapWithOneRowIsRing) {
  for (Pass pass : {Pass::kForward, Pass::kForwardBackward}) {
    for (bool cache : {false, true}) {
      Case ring = Make(Scheme("ring"), 6, Layout::kZigzag, Mask::Causal(), 8, 2);
      ring.pass = pass;
      ring.cache = cache;
      Case tile = TileOverlap(1, 6, Layout::kZigzag, Mask::Causal(), 8, 2);
      tile.pass = pass;
      tile.cache = cache;
      Env env(ring);
      auto rs = Expand(*env.ctx, ring.Params());
      auto ts = Expand(*env.ctx, tile.Params());
      ASSERT_TRUE(rs.ok() && ts.ok());
      for (int64_t r = 0; r < 6; ++r) {
        auto trace = [](const RankProgram& prog) {
          std::vector<std::tuple<int, int, int32_t, int32_t, int32_t, uint16_t, int64_t, int32_t>>
              out;
          for (const Op& op : prog.ops) {
            out.emplace_back(static_cast<int>(op.kind), static_cast<int>(op.phase), op.peer,
                             op.q_shard, op.kv_shard, op.tensors, op.bytes, op.tag);
          }
          return out;
        };
        EXPECT_EQ(trace(rs->ranks[r]), trace(ts->ranks[r])) << "rank " << r << " " << tile.Name();
      }
    }
  }
}

TEST(SchemeScheduleTest, Attention2DOverlapInvalidSizesAreErrors) {
  Case tile = TileOverlap(2, 2, Layout::kZigzag, Mask::Causal(), 8, 8);
  tile.p = 8;  // 2 x 2 tile on 8 GPUs
  ExpectInvalid(tile);
}

// ---------------------------------------------------------------------------------------------
// Time estimates derived by hand.
//
// Workload: B = 1, S = 4096, Hq = Hkv = 8, d = 64, bf16 (e = 2), partials fp32, full mask, on
// P = 4 ranks, tile a = 2 x b = 2. Per rank S/P = 1024 tokens, X = 1024 * 64 * 2 = 131072 bytes:
//   |Q| = 8X = 1,048,576    |KV| = 16X = 2,097,152    |Op| = |dQp| = 2,097,152
//   |L| = 1024 * 8 * 4 = 32,768    |dKVp| = 4,194,304
// GPU: 100 TFLOP/s bf16, efficiency 1 at every block size, no launch overhead, backward at the
// forward's rate. A full block of 1024 x 1024 tokens: 4 * 1024^2 * 8 * 64 = 2^31 FLOPs,
//   t_blk = 2^31 / 1e14 = 21.47483648 us forward, x 2.5 = 53.6870912 us backward.
// Links have no latency, so a transfer of n bytes at 100 GB/s takes n / 1e11 s:
//   |Q| 10.48576 us, |KV| 20.97152 us, |Op| + |L| 21.2992 us, over 25 GB/s four times that.
Workload HandWorkload(Pass pass) {
  Workload w;
  w.batch = 1;
  w.seq_len = 4096;
  w.q_heads = 8;
  w.kv_heads = 8;
  w.head_dim = 64;
  w.dtype = DType::kBf16;
  w.partial_dtype = DType::kFp32;
  w.mask = Mask::Full();
  w.pass = pass;
  return w;
}

Topology HandCluster(int64_t gpus_per_node, int64_t nodes, double nvlink_bytes_per_s,
                     double net_bytes_per_s) {
  Topology t = testing::SmallCluster(gpus_per_node, nodes);
  t.gpu.peak_tflops = {{DType::kBf16, 100}};
  t.gpu.attention_efficiency = {{1, 1.0}};
  t.gpu.launch_overhead_s = 0;
  t.levels[0].bandwidth_bytes_per_s = nvlink_bytes_per_s;
  t.levels[0].latency_s = 0;
  t.levels[1].bandwidth_bytes_per_s = net_bytes_per_s;
  t.levels[1].latency_s = 0;
  return t;
}

double A2dEstimateSeconds(const Topology& t, const Workload& w, Scheme scheme,
                          std::vector<std::string> placement, bool cache = false) {
  const PlanContext ctx(w, t);
  SchemeParams p;
  p.scheme = scheme;
  p.layout = Layout::kContiguous;
  p.tile_a = 2;
  p.tile_b = 2;
  p.cache_forward = cache;
  p.placement = std::move(placement);
  const Estimate e = MakeStrategy(scheme)->Evaluate(ctx, p);
  EXPECT_TRUE(e.valid) << e.reason;
  return e.time_s;
}

constexpr double kUs = 1e-6;

// One node of 4 GPUs (one switch level, 100 GB/s): the Q group and the KV group share each GPU's
// port. Forward:
//   ATTENTION2D: all-gather Q 10.48576 + all-gather K,V 20.97152 + tile 4 * 21.47483648
//     + reduce-scatter O,LSE 21.2992 = 138.65582592 us.
//   ATTENTION2D-O: row 0 is blocks (Q0,KV0), (Q0,KV1); the K,V shift for block 1 shares the port
//     with the Q shift that brings row 1's slot, so KV1 is here after 10.48576 + 20.97152 =
//     31.45728 us (> t_blk): row 0 = 31.45728 + 21.47483648 = 52.93211648 us. Row 1 has all its
//     data and no traffic of its own (its partial leaves after it): 2 t_blk = 42.94967296 us.
//     Then the O,LSE hop to the owner, 21.2992 us: 117.18098944 us; and the owner merges that
//     partial (no launch overhead here; both partials read and one written over HBM at 3e12
//     B/s): O 1024 x 8 x 64 x 4 + LSE 1024 x 8 x 4 = 2,129,920 bytes, 3 x 0.70997 = 2.12992 us:
//     119.31090944 us in all.
TEST(Attention2DOverlapTime, HandDerivedForwardOnOneSwitch) {
  const Topology t = HandCluster(4, 1, 1e11, 25e9);
  const Workload w = HandWorkload(Pass::kForward);
  EXPECT_NEAR(A2dEstimateSeconds(t, w, Scheme("attention2d"), {"q", "kv"}), 138.65582592 * kUs,
              1e-12);
  EXPECT_NEAR(A2dEstimateSeconds(t, w, Scheme("attention2d-o"), {"q", "kv"}), 119.31090944 * kUs,
              1e-12);
}

// Two nodes of 2 GPUs (NVLink 100 GB/s, network 25 GB/s). Placement q>kv puts each Q group in a
// node and each KV group across the two nodes; the groups use different links.
// Forward:
//   ATTENTION2D: 10.48576 (Q, NVLink) + 83.88608 (K,V, network) + 85.89934592 + 21.2992 (O,LSE,
//     NVLink) = 201.57038592 us.
//   ATTENTION2D-O: row 0: block 0, then block 1 waits for K,V: max(t_blk, 83.88608) + t_blk =
//     105.36091648 us (the Q shift, 10.48576 us on NVLink, is done long before); row 1: 2 t_blk =
//     42.94967296 us; the O,LSE hop 21.2992 us: 169.60978944 us; its merge 2.12992 us (as on
//     one switch): 171.73970944 us.
// Backward (no cache): the Q group moves Q, dO, LSE, D: 2,097,152 + 65,536 = 2,162,688 bytes =
// 21.62688 us; dQ 20.97152 us on NVLink; K,V 83.88608 us and dK,dV 167.77216 us on the network.
//   ATTENTION2D: 21.62688 + 83.88608 + 4 * 53.6870912 + 20.97152 + 167.77216 = 509.0050048 us.
//   ATTENTION2D-O: row 0: max(53.6870912, 83.88608) + 53.6870912 = 137.5731712 us; row 1 (the
//     last): its dK,dV chain has one hop (b = 2), sent after its last block, so the row is
//     2 * 53.6870912 = 107.3741824 us; then the last hops run on their own links:
//     max(dQ 20.97152, dK,dV 167.77216) = 167.77216 us: 412.7195136 us. Then the merges of the
//     incoming partials: dQ (2,097,152 bytes) 2.097152 us and dK,dV (4,194,304) 4.194304 us.
//     In all 419.0109696 us.
TEST(Attention2DOverlapTime, HandDerivedOverTwoLevels) {
  const Topology t = HandCluster(2, 2, 1e11, 25e9);
  const Workload fwd = HandWorkload(Pass::kForward);
  EXPECT_NEAR(A2dEstimateSeconds(t, fwd, Scheme("attention2d"), {"q", "kv"}), 201.57038592 * kUs,
              1e-12);
  EXPECT_NEAR(A2dEstimateSeconds(t, fwd, Scheme("attention2d-o"), {"q", "kv"}), 171.73970944 * kUs,
              1e-12);
  const Workload bwd = HandWorkload(Pass::kBackward);
  EXPECT_NEAR(A2dEstimateSeconds(t, bwd, Scheme("attention2d"), {"q", "kv"}), 509.0050048 * kUs,
              1e-12);
  EXPECT_NEAR(A2dEstimateSeconds(t, bwd, Scheme("attention2d-o"), {"q", "kv"}), 419.0109696 * kUs,
              1e-12);
}

// Why ATTENTION2D-O's overlap never loses to ATTENTION2D's collectives in the model: each row
// lasts at most its blocks plus the transfers charged to it, max(x, y) <= x + y, and every
// transfer is charged once: the rows and tail together carry the a-1 Q shifts, b-1 K,V shifts,
// a-1 partial hops and b-1 dK,dV hops that ATTENTION2D's collectives run as (p-1) ring steps each,
// with the same per-step cost (CommModel::RingCollective is p-1 RingShifts). What ATTENTION2D-O
// pays beside them is the merges of its incoming partials on the compute stream (a reduce-scatter
// reduces inside the collective): its time less that stage, which must hold a - 1 partial merges
// and, backward, b - 1 dK,dV merges (PartialMergeSeconds), is never above ATTENTION2D's. Checked
// for every candidate the search enumerates on clusters of 4 to 16 GPUs, masks, GQA, passes and
// cache choices.
TEST(Attention2DOverlapTime, NeverSlowerThanAttention2D) {
  int compared = 0, faster = 0;
  // Clusters where no collective group has several members in one node and leaves it: there a
  // collective's crossing is spread over the node's NICs (comm_model.h RingCollective), which
  // Attention2D-O's point-to-point shifts cannot use, so Attention2D may be faster.
  for (auto [per_node, nodes] : {std::pair<int64_t, int64_t>{4, 1}, {8, 1}, {1, 8}}) {
    for (Mask mask : {Mask::Causal(), Mask::Full(), Mask::Window(500)}) {
      for (Pass pass : {Pass::kForward, Pass::kBackward, Pass::kForwardBackward}) {
        for (int64_t seq : {int64_t{4096}, int64_t{1} << 16}) {
          const Topology t = testing::SmallCluster(per_node, nodes);
          Workload w = testing::SmallWorkload();
          w.seq_len = seq * 3;  // divisible by 2 x 6 and 2 x 16 zigzag chunks
          w.mask = mask;
          w.pass = pass;
          const PlanContext ctx(w, t);
          const auto plain = MakeStrategy(Scheme("attention2d"));
          const auto overlap = MakeStrategy(Scheme("attention2d-o"));
          for (SchemeParams p : overlap->Enumerate(ctx)) {
            const Estimate eo = overlap->Evaluate(ctx, p);
            if (!eo.valid) continue;
            p.scheme = Scheme("attention2d");
            const Estimate ep = plain->Evaluate(ctx, p);
            ASSERT_TRUE(ep.valid) << ep.reason;
            // The merges, by hand: O+LSE (forward) or dQ (backward) partials of the Q chain,
            // dK+dV of the backward's chain, each a launch and 3 passes over HBM.
            const ShardBytes& s = ctx.shard;
            auto merge = [&](double bytes) {
              return t.gpu.launch_overhead_s + 3.0 * bytes / t.gpu.hbm_bytes_per_s;
            };
            double want_merges = 0;
            if (HasForward(pass))
              want_merges += static_cast<double>(p.tile_a - 1) * merge(s.o_partial + s.lse);
            if (HasBackward(pass)) {
              want_merges += static_cast<double>(p.tile_a - 1) * merge(s.dq_partial) +
                             static_cast<double>(p.tile_b - 1) * merge(s.dkv_partial);
            }
            double merges = 0;
            for (const TimeStage& st : eo.stages) {
              if (st.label.find("merges of incoming partials") != std::string::npos)
                merges += st.Seconds();
            }
            EXPECT_NEAR(merges, want_merges, 1e-12 + 1e-9 * want_merges)
                << planner::DescribeParams(p) << " " << PassName(pass);
            EXPECT_LE(eo.time_s - merges, ep.time_s * (1 + 1e-12))
                << planner::DescribeParams(p) << " " << PassName(pass);
            EXPECT_EQ(eo.bytes_per_rank, ep.bytes_per_rank) << planner::DescribeParams(p);
            faster += eo.time_s - merges < ep.time_s * (1 - 1e-6) ? 1 : 0;
            ++compared;
          }
        }
      }
    }
  }
  EXPECT_GT(compared, 500);
  EXPECT_GT(faster, compared / 2);  // the overlap hides something in most plans
}

}  // namespace
}  // namespace meshplan::planner::scheme_tests
