// Symmetry proven from a plan's structure (Strategy::ProveTranslationInvariance, used by
// SimulatePlan): where the Mesh tile family proves it, the proof must be sound (digesting every
// rank's program, the check the simulator ran before, finds the same classes and the replay the
// same time) and the replay must expand only the representatives and their images.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "planner/plan_schedule.h"
#include "planner/search.h"
#include "simulator/plan_simulation.h"
#include "tests/simulator/golden_helpers.h"

namespace meshplan::sim {
namespace {

// 32 GPUs: 4 nodes of 8 on a switch, the nodes on a fat tree (shared uplinks with
// oversubscription > 1).
Topology FourNodesOfEightGpus(double oversubscription) {
  Topology t = testing::TestGpuCluster("4x8");
  t.levels.push_back({"node", LinkKind::kSwitch, 8, 400e9, 1e-6, 1.0, {}, {}});
  t.levels.push_back({"ib", LinkKind::kFatTree, 4, 50e9, 5e-6, oversubscription, {}, {}});
  return t;
}

struct Replays {
  PlanSimulation proven, digested;
  int64_t expanded = 0;  // ranks the proven replay expanded (expansion_progress calls)
};

Replays ReplayBothWays(const Plan& plan, const Topology& t) {
  Replays out;
  SimOptions options;
  options.record_op_times = false;
  options.expansion_progress = [&](int64_t, int64_t) { ++out.expanded; };
  auto proven = SimulatePlan(plan, t, options);
  EXPECT_TRUE(proven.ok()) << proven.status().message();
  options.expansion_progress = nullptr;
  options.structural_symmetry = false;
  auto digested = SimulatePlan(plan, t, options);
  EXPECT_TRUE(digested.ok()) << digested.status().message();
  if (proven.ok()) out.proven = std::move(proven).value();
  if (digested.ok()) out.digested = std::move(digested).value();
  return out;
}

// Every Mesh and Mesh-Ulysses plan over tiles, layouts, masks, passes, cache and placements on
// 32 GPUs: where the proof holds, digesting every rank confirms the same classes (soundness),
// both replays agree bit for bit (the same representatives replay the same programs), and the
// proven replay expanded at most the representatives and one image per generator each.
TEST(StructuralSymmetry, EveryProofIsConfirmedByDigestingEveryRank) {
  int proven = 0, refused = 0, with_ulysses = 0;
  for (double oversubscription : {1.0, 4.0}) {
    const Topology t = FourNodesOfEightGpus(oversubscription);
    for (int64_t u : {1, 2, 4}) {
      const int64_t m = 32 / u;
      for (int64_t a = 1; a <= m; a *= 2) {
        for (Layout layout : {Layout::kZigzag, Layout::kContiguous, Layout::kStriped}) {
          for (const Mask& mask : {Mask::Full(), Mask::Causal(), Mask::Window(3000)}) {
            for (Pass pass : {Pass::kForward, Pass::kForwardBackward}) {
              for (bool reversed : {false, true}) {
                Workload w = Workload::Default();
                w.seq_len = 1 << 15;
                w.mask = mask;
                w.pass = pass;
                const planner::PlanContext ctx(w, t);
                SchemeParams p;
                p.scheme = Scheme(u == 1 ? "mesh" : "mesh-ulysses");
                p.layout = layout;
                p.tile_a = a;
                p.tile_b = m / a;
                p.ulysses = u;
                p.cache_forward = pass == Pass::kForwardBackward;
                p.placement = u == 1 ? std::vector<std::string>{"q", "kv"}
                                     : std::vector<std::string>{"ulysses", "q", "kv"};
                if (reversed) std::swap(p.placement.front(), p.placement.back());
                const Plan plan = planner::MakePlan(ctx, p);
                const std::string what = std::string(p.scheme.name()) + " U=" + std::to_string(u) +
                                         " a=" + std::to_string(a) + " " +
                                         std::string(LayoutName(layout)) + " " + mask.ToString() +
                                         (reversed ? " reversed" : "") + " oversub " +
                                         std::to_string(oversubscription);
                const Status proof = planner::ProveTranslationInvariance(plan, t);
                if (!proof.ok()) {
                  if (proof.message().find("not proven equal in work") != std::string::npos)
                    ++refused;
                  continue;
                }
                const Replays r = ReplayBothWays(plan, t);
                if (!r.proven.symmetric) {  // the topology allows no translation: nothing to prove
                  EXPECT_FALSE(r.digested.symmetric) << what;
                  continue;
                }
                ++proven;
                with_ulysses += u > 1 ? 1 : 0;
                const std::string suffix = ", proven from the plan's structure";
                ASSERT_GE(r.proven.symmetry.size(), suffix.size()) << what;
                EXPECT_EQ(r.proven.symmetry.substr(r.proven.symmetry.size() - suffix.size()),
                          suffix)
                    << what << ": " << r.proven.symmetry;
                // Soundness: every rank's digest agrees with its images'.
                EXPECT_TRUE(r.digested.symmetric) << what << ": " << r.digested.symmetry;
                EXPECT_EQ(r.digested.symmetry.substr(0, r.digested.symmetry.find(')')),
                          r.proven.symmetry.substr(0, r.proven.symmetry.find(')')))
                    << what;
                EXPECT_EQ(r.proven.result.total_s, r.digested.result.total_s) << what;
                EXPECT_EQ(r.proven.result.flows, r.digested.result.flows) << what;
                // Classes x (1 + generators) at most; here at most 3 translated dimensions.
                EXPECT_LE(r.expanded, 4 * (32 / 2)) << what;
                EXPECT_LT(r.expanded, 32) << what << ": " << r.proven.symmetry;
              }
            }
          }
        }
      }
    }
  }
  // Not vacuous: full masks on every layout and causal zigzag are proven for most tiles; window
  // masks, causal contiguous and striped are not.
  EXPECT_GE(proven, 100);
  EXPECT_GE(with_ulysses, 50);
  EXPECT_GE(refused, 100);
}

// A proof needs a layout whose blocks are equal in work: causal contiguous blocks are not, and
// the reason says so; schemes without a proof say that.
TEST(StructuralSymmetry, RefusalsSayWhy) {
  const Topology t = FourNodesOfEightGpus(1.0);
  Workload w = Workload::Default();
  w.seq_len = 1 << 15;
  w.mask = Mask::Causal();
  const planner::PlanContext ctx(w, t);
  SchemeParams p;
  p.scheme = Scheme("mesh");
  p.layout = Layout::kContiguous;
  p.tile_a = 8;
  p.tile_b = 4;
  p.placement = {"q", "kv"};
  const Status contiguous = planner::ProveTranslationInvariance(planner::MakePlan(ctx, p), t);
  ASSERT_FALSE(contiguous.ok());
  EXPECT_EQ(contiguous.message(),
            "the contiguous layout's blocks under the causal mask are not proven equal in work");
  p.layout = Layout::kZigzag;
  EXPECT_TRUE(planner::ProveTranslationInvariance(planner::MakePlan(ctx, p), t).ok());
  SchemeParams heads;
  heads.scheme = Scheme("ulysses");
  heads.layout = Layout::kContiguous;
  heads.ulysses = 32;
  heads.placement = {"ulysses"};
  Workload mha = w;
  mha.q_heads = 32;
  mha.kv_heads = 32;
  const planner::PlanContext mha_ctx(mha, t);
  const Status none = planner::ProveTranslationInvariance(planner::MakePlan(mha_ctx, heads), t);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.message(), "no structural proof for ulysses");
}

// Ring-Attention's proof (planner/schemes/ring.cc) and all-gather KV's (the same blocks, and
// collectives over every rank) over every layout they offer, masks whose blocks are proven equal
// in work and others, both passes and the forward cache, on both clusters: confirmed by digesting
// every rank, the same replay, and only representatives and their images expanded.
TEST(StructuralSymmetry, RingProofsAreConfirmedByDigestingEveryRank) {
  int proven = 0, refused = 0, gathers = 0;
  for (const char* scheme : {"ring", "allgather-kv"}) {
    const std::vector<int64_t> documents = {4096, 12288, 8192, 8192};  // multiples of 2 x 32
    for (double oversubscription : {1.0, 4.0}) {
      const Topology t = FourNodesOfEightGpus(oversubscription);
      for (Layout layout : {Layout::kZigzag, Layout::kContiguous, Layout::kStriped,
                            Layout::kBalanced, Layout::kDocZigzag}) {
        for (const Mask& mask : {Mask::Full(), Mask::Causal(), Mask::Window(3000),
                                 Mask::Documents(documents), Mask::Documents(documents, true)}) {
          for (Pass pass : {Pass::kForward, Pass::kForwardBackward}) {
            for (bool cache : {false, true}) {
              if (cache && pass == Pass::kForward) continue;
              Workload w = Workload::Default();
              w.seq_len = 1 << 15;
              w.mask = mask;
              w.pass = pass;
              const planner::PlanContext ctx(w, t);
              SchemeParams p;
              p.scheme = Scheme(scheme);
              p.layout = layout;
              p.ring = 32;
              p.cache_forward = cache;
              p.placement = {"cp"};
              const Plan plan = planner::MakePlan(ctx, p);
              const std::string what = std::string(scheme) + " " + std::string(LayoutName(layout)) +
                                       " " + mask.ToString() + (cache ? " cache" : "") +
                                       " oversub " + std::to_string(oversubscription);
              const Status proof = planner::ProveTranslationInvariance(plan, t);
              if (!proof.ok()) {
                if (proof.message().find("not proven equal in work") != std::string::npos)
                  ++refused;
                continue;
              }
              const Replays r = ReplayBothWays(plan, t);
              if (!r.proven.symmetric) {
                EXPECT_FALSE(r.digested.symmetric) << what;
                continue;
              }
              ++proven;
              gathers += std::string(scheme) == "allgather-kv" ? 1 : 0;
              EXPECT_NE(r.proven.symmetry.find(", proven from the plan's structure"),
                        std::string::npos)
                  << what << ": " << r.proven.symmetry;
              EXPECT_TRUE(r.digested.symmetric) << what << ": " << r.digested.symmetry;
              EXPECT_EQ(r.proven.result.total_s, r.digested.result.total_s) << what;
              EXPECT_EQ(r.proven.result.flows, r.digested.result.flows) << what;
              EXPECT_LT(r.expanded, 32) << what << ": " << r.proven.symmetry;
            }
          }
        }
      }
    }
  }
  // Full masks on four layouts, causal zigzag, both document masks on doc-zigzag: 7 x 3 x 2 per
  // scheme.
  EXPECT_GE(proven, 60);
  EXPECT_GE(gathers, 30);
  EXPECT_GE(refused, 20);
}

}  // namespace
}  // namespace meshplan::sim
