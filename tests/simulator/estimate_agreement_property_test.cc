// The planner's closed-form estimate against the simulator's replay of the same plan, over every
// valid plan of every scheme (planner::Search keeps them all ranked), on two shipped clusters
// (8 and 32 H100s), for dense masks (full, causal, prefix), a sliding window and varlen document
// masks (sampled, causal and bidirectional), forward and fwd+bwd, at 256K tokens. Each plan is
// replayed as `meshplan plan --simulate` replays it (SimulatedSeconds). The bounds below are what
// holds, with the reason the closed form and the replay part where they part (docs/simulator.md,
// "Simulated vs estimated", which has the measured table: set MESHPLAN_AGREEMENT_TABLE=1 to print
// it).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "core/cluster/topology_toml.h"
#include "core/sequence/mask.h"
#include "planner/schemes/registry.h"
#include "planner/search.h"
#include "simulator/simulation_timer.h"

namespace meshplan::sim {
namespace {

struct MaskCase {
  const char* name;
  const char* spec;  // ParseMask's text
  // Largest |replay / estimate - 1| allowed over every plan of every scheme.
  double bound;
};

// Measured on 2026-11-29 (docs/simulator.md, "Simulated vs estimated"); each bound is the largest
// |replay / estimate - 1| seen, rounded up.
// Dense masks (full, causal, prefix) and long documents (64K median): every ring step holds work
// and the busiest rank's work spread evenly over its steps is what the replay sees; they part by
// per-message latency, head-of-line blocking on one send stream and ATTENTION2D's dependencies
// (its gathers exposed in the estimate): 6.0% (8.7% with 64K documents, mesh-ulysses).
// Sparse masks (a 4K window, documents with an 8K median): a rank's work sits in a few of its
// ring steps (its own shard's and its neighbours'). The estimate charges the busiest rank's
// kernels and merges (PlanContext::BusiestRankMerges) spread evenly over the steps, so each
// step's communication hides behind an average step; the replay sees steps with nothing to hide
// it behind, the big neighbour block arriving last, and dK,dV chains crossing ranks with empty
// steps. The replay is then slower: up to +82% (window, LoongTrain on 32 GPUs), +47%
// (bidirectional documents, ATTENTION2D-O with a = 8), +32% (causal documents).
constexpr MaskCase kMasks[] = {
    {"full", "full", 0.08},
    {"causal", "causal", 0.08},
    {"prefix:64K", "prefix:64K", 0.08},
    {"docs median 64K", "docs-sampled:lognormal:median=64K:sigma=1.5:seed=3", 0.10},
    {"window:4096", "window:4096", 0.90},
    {"docs median 8K", "docs-sampled:lognormal:median=8K:sigma=1.5:seed=3", 0.35},
    {"docs-full median 8K", "docs-full-sampled:lognormal:median=8K:sigma=1.5:seed=3", 0.50},
};

// The other way (the replay faster than the estimate) no mask goes beyond 35%: the estimate no
// longer charges a merge for every ring step when most blocks are empty (the zigzag ring
// on documents, 28% over before), and what is left is ATTENTION2D's all-gathers exposed up front
// and all-gather KV's one exchange on a window (-33% and -31%).
constexpr double kMostOverestimate = 0.35;

struct Worst {
  double ratio = 1.0;
  std::string what;
  double estimate_s = 0, replay_s = 0;
};

TEST(EstimateAgreementProperty, EveryPlanOfEverySchemeAgreesWithItsReplay) {
  const bool table = std::getenv("MESHPLAN_AGREEMENT_TABLE") != nullptr;
  // Per scheme x mask: ratios, for the table.
  std::map<std::pair<std::string, std::string>, std::vector<double>> ratios;
  int compared = 0;
  for (const char* file : {"dgx-h100-1node.toml", "dgx-h100-4node.toml"}) {
    auto topology = LoadTopologyFile(std::string(MESHPLAN_SOURCE_DIR) + "/topologies/" + file);
    ASSERT_TRUE(topology.ok()) << topology.status().message();
    for (const MaskCase& mc : kMasks) {
      Worst over, under;  // the largest ratio above 1 and the smallest below
      for (Pass pass : {Pass::kForward, Pass::kForwardBackward}) {
        Workload w = Workload::Default();
        w.seq_len = 1 << 18;
        w.pass = pass;
        auto mask = ParseMask(mc.spec);
        ASSERT_TRUE(mask.ok()) << mask.status().message();
        ASSERT_TRUE(DrawDocuments(&*mask, w.seq_len).ok());
        w.mask = *mask;
        const planner::PlanContext ctx(w, *topology);
        const planner::SearchResult found = planner::Search(ctx, planner::SearchOptions{});
        ASSERT_FALSE(found.ranked.empty()) << file << " " << mc.name;
        for (const planner::Estimate& e : found.ranked) {
          if (!e.valid) continue;
          auto replay = SimulatedSeconds(ctx, e.params);
          ASSERT_TRUE(replay.ok()) << replay.status().message();
          const double ratio = *replay / e.time_s;
          const std::string scheme(SchemeName(e.params.scheme));
          const std::string what = std::string(file) + " " + mc.name + " " +
                                   std::string(PassName(pass)) + " " + scheme + " " +
                                   planner::DescribeParams(e.params);
          if (ratio > over.ratio) over = {ratio, what, e.time_s, *replay};
          if (ratio < under.ratio) under = {ratio, what, e.time_s, *replay};
          if (table) ratios[{scheme, mc.name}].push_back(ratio - 1.0);
          ++compared;
        }
      }
      for (const Worst& worst : {over, under}) {
        EXPECT_LE(std::abs(worst.ratio - 1.0), mc.bound)
            << worst.what << ": estimate " << worst.estimate_s * 1e3 << " ms, replay "
            << worst.replay_s * 1e3 << " ms";
      }
      EXPECT_GE(under.ratio, 1.0 - kMostOverestimate)
          << under.what << ": estimate " << under.estimate_s * 1e3 << " ms, replay "
          << under.replay_s * 1e3 << " ms";
    }
  }
  EXPECT_GE(compared, 3000);
  if (table) {
    std::printf("| scheme | mask | plans | median | min | max |\n|---|---|---|---|---|---|\n");
    for (auto& [key, v] : ratios) {
      std::sort(v.begin(), v.end());
      std::printf("| %s | %s | %zu | %+.1f%% | %+.1f%% | %+.1f%% |\n", key.first.c_str(),
                  key.second.c_str(), v.size(), 100 * v[v.size() / 2], 100 * v.front(),
                  100 * v.back());
    }
    std::printf("%d plans\n", compared);
  }
}

}  // namespace
}  // namespace meshplan::sim
