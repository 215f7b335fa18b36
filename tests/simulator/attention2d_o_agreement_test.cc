// ATTENTION2D-O on the clusters of the ATTENTION2D paper's two headline runs (a100-16node-4gpu,
// h100-64node-1gpu) with a GPT-3-like attention layer (96 heads, MHA, d = 128, causal): the
// simulator's replay of the best plan is within 10% of the planner's estimate, and replaying the
// same tile, placement and layout as ATTENTION2D is never faster than as ATTENTION2D-O.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/cluster/topology_toml.h"
#include "planner/schemes/registry.h"
#include "planner/search.h"
#include "planner/strategy.h"
#include "simulator/simulate.h"

namespace meshplan::sim {
namespace {

double Replay(const planner::PlanContext& ctx, const Topology& topology,
              const SchemeParams& params) {
  auto schedule = planner::MakeStrategy(params.scheme)->Expand(ctx, params);
  EXPECT_TRUE(schedule.ok()) << schedule.status().message();
  if (!schedule.ok()) return 0;
  const Placement placement(planner::RankDims(params), params.placement);
  std::vector<int64_t> gpu(ctx.num_ranks);
  for (int64_t r = 0; r < ctx.num_ranks; ++r) gpu[r] = placement.GpuOf(r);
  SimOptions options;
  options.record_op_times = false;
  auto result = Simulate(*schedule, topology, gpu, ctx.workload.dtype, options);
  EXPECT_TRUE(result.ok()) << result.status().message();
  return result.ok() ? result->total_s : 0;
}

TEST(Attention2DOverlapAgreement, PaperClustersWithinTenPercent) {
  int compared = 0;
  for (const char* file : {"a100-16node-4gpu.toml", "h100-64node-1gpu.toml"}) {
    auto topology = LoadTopologyFile(std::string(MESHPLAN_SOURCE_DIR) + "/topologies/" + file);
    ASSERT_TRUE(topology.ok()) << topology.status().message();
    for (int64_t seq : {int64_t{32} << 10, int64_t{128} << 10}) {
      for (Pass pass : {Pass::kForward, Pass::kForwardBackward}) {
        Workload w = Workload::Default();
        w.seq_len = seq;
        w.q_heads = w.kv_heads = 96;
        w.head_dim = 128;
        w.mask = Mask::Causal();
        w.pass = pass;
        const planner::PlanContext ctx(w, *topology);
        planner::SearchOptions only;
        only.schemes = {Scheme("attention2d-o")};
        const planner::SearchResult found = planner::Search(ctx, only);
        ASSERT_FALSE(found.ranked.empty());
        const planner::Estimate& e = found.ranked.front();
        const std::string what = std::string(file) + " S=" + std::to_string(seq) + " " +
                                 std::string(PassName(pass)) + " " +
                                 planner::DescribeParams(e.params);
        const double overlapped = Replay(ctx, *topology, e.params);
        EXPECT_NEAR(overlapped / e.time_s, 1.0, 0.10) << what;
        // The overlap itself never slows the plan: with one GPU per node (no all-gather of
        // Attention2D is spread over a node's NICs, comm_model.h RingCollective) and the
        // per-block merges Attention2D-O needs and Attention2D does not left out
        // (ring_step_partial_passes = 0), the overlapped form is never slower.
        if (std::string(file) == "h100-64node-1gpu.toml") {
          Topology no_merges = *topology;
          no_merges.gpu.ring_step_partial_passes = 0;
          const planner::PlanContext bare(w, no_merges);
          SchemeParams plain = e.params;
          plain.scheme = Scheme("attention2d");
          EXPECT_LE(Replay(bare, no_merges, e.params), Replay(bare, no_merges, plain)) << what;
        }
        ++compared;
      }
    }
  }
  EXPECT_EQ(compared, 8);
}

}  // namespace
}  // namespace meshplan::sim
