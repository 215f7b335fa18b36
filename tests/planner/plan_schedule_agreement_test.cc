// One plan, three consumers: for every candidate the search enumerates on small clusters, the
// expanded schedule passes every invariant check and moves exactly the bytes and FLOPs that
// the analytic evaluation reports. A change that forks a scheme's logic breaks this test.
#include <gtest/gtest.h>

#include <algorithm>

#include "planner/schedule_check.h"
#include "planner/schemes/registry.h"
#include "planner/strategy.h"
#include "tests/planner/test_cluster.h"

namespace meshplan::planner {
namespace {

struct Case {
  const char* name;
  int64_t gpus_per_node, nodes, seq, hq, hkv;
  Mask mask;
};

std::vector<Case> AgreementCases() {
  return {
      {"mha4-causal", 2, 2, 1024, 4, 4, Mask::Causal()},  // Ulysses valid (P = Hkv = 4)
      {"gqa8-causal", 4, 2, 2048, 8, 2, Mask::Causal()},  // P = 8, g = 4
      {"gqa6-full", 2, 3, 1536, 4, 2, Mask::Full()},      // P = 6: non-square tiles
      {"gqa8-window", 4, 2, 2048, 8, 2, Mask::Window(300)},
      {"gqa8-docs", 4, 2, 2048, 8, 2, Mask::Documents({100, 900, 48, 1000})},
  };
}

double MaxOf(const std::vector<double>& v) {
  return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end());
}
double MeanOf(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0.0 : s / static_cast<double>(v.size());
}

TEST(PlanScheduleAgreement, EveryCandidateExpandsToWhatItsEstimateSays) {
  int checked = 0;
  for (const Case& c : AgreementCases()) {
    for (Pass pass : {Pass::kForward, Pass::kBackward, Pass::kForwardBackward}) {
      const Topology t = testing::SmallCluster(c.gpus_per_node, c.nodes);
      Workload w;
      w.seq_len = c.seq;
      w.q_heads = c.hq;
      w.kv_heads = c.hkv;
      w.head_dim = 32;
      w.mask = c.mask;
      w.pass = pass;
      ASSERT_TRUE(w.Validate().ok()) << c.name;
      const PlanContext ctx(w, t);
      for (Scheme scheme : planner::AllSchemes()) {
        const auto strategy = MakeStrategy(scheme);
        for (const SchemeParams& p : strategy->Enumerate(ctx)) {
          const Estimate e = strategy->Evaluate(ctx, p);
          if (!e.valid) continue;
          const std::string what = std::string(c.name) + " " + std::string(PassName(pass)) + " " +
                                   std::string(SchemeName(scheme)) + " " +
                                   planner::DescribeParams(p);
          auto schedule = strategy->Expand(ctx, p);
          ASSERT_TRUE(schedule.ok()) << what << ": " << schedule.status().message();
          const Status st = CheckSchedule(*schedule, ctx);
          ASSERT_TRUE(st.ok()) << what << ": " << st.message();
          const ScheduleSummary sum = Summarize(*schedule);
          // Every rank sends exactly the closed-form volume the estimate reports.
          for (double sent : sum.bytes_sent) {
            ASSERT_NEAR(sent, e.bytes_per_rank, 1e-9 * e.bytes_per_rank + 1e-6) << what;
          }
          ASSERT_NEAR(MaxOf(sum.flops), e.flops_max, 1e-9 * e.flops_max) << what;
          ASSERT_NEAR(MeanOf(sum.flops), e.flops_mean, 1e-9 * e.flops_mean) << what;
          // Mesh: the estimate times the very step table the schedule runs (same step count).
          if (scheme == Scheme("mesh") || scheme == Scheme("mesh-ulysses")) {
            for (Phase phase : {Phase::kForward, Phase::kBackward}) {
              const std::string label =
                  phase == Phase::kForward ? "fwd mesh step" : "bwd mesh step";
              int64_t estimate_steps = 0;
              for (const TimeStage& stage : e.stages)
                estimate_steps += stage.label == label ? stage.count : 0;
              int32_t last_step = -1;
              for (const RankProgram& prog : schedule->ranks) {
                for (const Op& op : prog.ops) {
                  if (op.phase == phase) last_step = std::max(last_step, op.step);
                }
              }
              ASSERT_EQ(estimate_steps, last_step + 1)
                  << what << " phase " << static_cast<int>(phase);
            }
          }
          // Zigzag balances causal work: every rank within 1% of the mean.
          if (c.mask.kind == MaskKind::kCausal && p.layout == Layout::kZigzag) {
            ASSERT_LE(FlopsImbalance(sum), 1.01) << what;
          }
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 200);
}

// Mesh-Attention with a = 1 is Ring-Attention: the same KV shards arrive from the same peers
// in the same order, the dK,dV partials travel the same chain in the same order, the same
// blocks are computed in the same order, and the same bytes move. (How the KV and dK,dV streams
// interleave within a backward step may differ: each scheme's step timing decides that.) With
// the forward cache both run the backward in chain order: the shards held at steps 1..P-1
// first, the own shard last (Mesh's chain pacing, Ring's own_shard_last).
TEST(PlanScheduleAgreement, MeshWithOneRowIsRing) {
  const Topology t = testing::SmallCluster(4, 2);
  for (Pass pass : {Pass::kForward, Pass::kForwardBackward})
    for (bool cache : {false, true}) {
      if (cache && !HasBackward(pass)) continue;
      for (Layout layout : {Layout::kZigzag, Layout::kContiguous}) {
        Workload w;
        w.seq_len = 4096;
        w.q_heads = 8;
        w.kv_heads = 2;
        w.head_dim = 32;
        w.pass = pass;
        const PlanContext ctx(w, t);
        SchemeParams ring;
        ring.scheme = Scheme("ring");
        ring.layout = layout;
        ring.ring = 8;
        ring.placement = {"cp"};
        ring.cache_forward = cache;
        SchemeParams mesh;
        mesh.scheme = Scheme("mesh");
        mesh.layout = layout;
        mesh.tile_a = 1;
        mesh.tile_b = 8;
        mesh.placement = {"q", "kv"};
        mesh.cache_forward = cache;
        auto rs = MakeStrategy(Scheme("ring"))->Expand(ctx, ring);
        auto ms = MakeStrategy(Scheme("mesh"))->Expand(ctx, mesh);
        ASSERT_TRUE(rs.ok() && ms.ok());
        for (int64_t r = 0; r < 8; ++r) {
          auto trace = [](const RankProgram& prog, OpKind kind, uint16_t tensors) {
            std::vector<std::tuple<int, int32_t, int32_t, int32_t, uint16_t, int64_t>> out;
            for (const Op& op : prog.ops) {
              if (op.kind == kind && (kind == OpKind::kCompute || op.tensors == tensors)) {
                out.emplace_back(static_cast<int>(op.phase), op.peer, op.q_shard, op.kv_shard,
                                 op.tensors, op.bytes);
              }
            }
            return out;
          };
          for (OpKind kind : {OpKind::kRecv, OpKind::kSend, OpKind::kCompute}) {
            for (uint16_t tensors : {kTensorKV, kTensorDKV}) {
              const auto ring_ops = trace(rs->ranks[r], kind, tensors);
              if (tensors == kTensorKV || HasBackward(pass)) {
                EXPECT_FALSE(ring_ops.empty());
              }
              EXPECT_EQ(ring_ops, trace(ms->ranks[r], kind, tensors))
                  << "rank " << r << " " << OpKindName(kind) << " " << TensorNames(tensors) << " "
                  << LayoutName(layout) << " " << PassName(pass) << (cache ? " cache" : "");
            }
          }
        }
      }
    }
}

}  // namespace
}  // namespace meshplan::planner
