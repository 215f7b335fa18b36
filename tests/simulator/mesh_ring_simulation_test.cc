// The simulator's view of a 1 x n Mesh tile against Ring-Attention (the planner side is
// tests/planner/mesh_ring_equivalence_test.cc): the same simulated time, with and without the
// forward cache, and a cached backward whose dK+dV chain overlaps the blocks.
#include <gtest/gtest.h>

#include <string>

#include "planner/mesh/step_costs.h"
#include "planner/schemes/registry.h"
#include "planner/strategy.h"
#include "simulator/simulate.h"
#include "tests/planner/test_cluster.h"

namespace meshplan::sim {
namespace {

SchemeParams RingParams(int64_t n, bool cache) {
  SchemeParams p;
  p.scheme = Scheme("ring");
  p.layout = Layout::kZigzag;
  p.ring = n;
  p.placement = {"cp"};
  p.cache_forward = cache;
  return p;
}

SchemeParams MeshParams(int64_t n, bool cache) {
  SchemeParams p;
  p.scheme = Scheme("mesh");
  p.layout = Layout::kZigzag;
  p.tile_a = 1;
  p.tile_b = n;
  p.placement = {"q", "kv"};
  p.cache_forward = cache;
  return p;
}

Result<SimResult> ReplayMeshRing(const planner::PlanContext& ctx, const Topology& topo,
                                 const SchemeParams& p) {
  auto schedule = planner::MakeStrategy(p.scheme)->Expand(ctx, p);
  if (!schedule.ok()) return schedule.status();
  const Placement placement(planner::RankDims(p), p.placement);
  std::vector<int64_t> gpu(static_cast<size_t>(ctx.num_ranks));
  for (int64_t r = 0; r < ctx.num_ranks; ++r) gpu[static_cast<size_t>(r)] = placement.GpuOf(r);
  return Simulate(*schedule, topo, gpu, ctx.workload.dtype);
}

// Same simulated time. The two schedules compute the same blocks in the same order on every rank
// and send the same messages to the same peers in the same order
// (PlanScheduleAgreement.MeshWithOneRowIsRing); they differ only in where a Recv or a Merge sits
// in program order within a step, which moves no start time while every block outlasts the
// messages beside it (compute-bound). Tolerance: 1e-6 relative (rounding).
TEST(MeshRingSimulation, OneByNTileSimulatesLikeRing) {
  for (int64_t n : {4, 8}) {
    const Topology topo = meshplan::testing::SmallCluster(n, 1);
    for (bool cache : {false, true}) {
      const Workload w = meshplan::testing::ComputeBoundWorkload(Pass::kForwardBackward);
      const planner::PlanContext ctx(w, topo);
      auto ring = ReplayMeshRing(ctx, topo, RingParams(n, cache));
      auto mesh = ReplayMeshRing(ctx, topo, MeshParams(n, cache));
      ASSERT_TRUE(ring.ok()) << ring.status().message();
      ASSERT_TRUE(mesh.ok()) << mesh.status().message();
      EXPECT_NEAR(mesh->total_s, ring->total_s, 1e-6 * ring->total_s)
          << "n=" << n << (cache ? " cache" : "");
    }
  }
}

// Cached backward, compute-bound: hop k of the dK+dV chain travels while block k+1 runs and the
// last hop while the owner's own block runs, so a rank's compute stream never waits for a hop:
// its exposed communication is below one hop (t_dkv; the only waits left are the first block's
// start and merges behind a partial still in flight). Before chain pacing the blocks ran first
// and n-2 hops followed them: (n-2) * t_dkv exposed.
TEST(MeshRingSimulation, CachedBackwardExposesLessThanOneHop) {
  const int64_t n = 8;
  const Topology topo = meshplan::testing::SmallCluster(n, 1);
  const Workload w = meshplan::testing::ComputeBoundWorkload(Pass::kBackward);
  const planner::PlanContext ctx(w, topo);
  for (const SchemeParams& p : {MeshParams(n, true), RingParams(n, true)}) {
    const SchemeParams tile = MeshParams(n, true);
    const Placement placement(planner::RankDims(tile), tile.placement);
    const double hop =
        planner::mesh::PhaseStepTimes(ctx, tile, placement, Phase::kBackward).kv_partial;
    ASSERT_GT(hop, 0);
    auto result = ReplayMeshRing(ctx, topo, p);
    ASSERT_TRUE(result.ok()) << result.status().message();
    for (const RankStats& r : result->ranks)
      EXPECT_LT(r.exposed_comm_s, hop) << SchemeName(p.scheme);
  }
}

}  // namespace
}  // namespace meshplan::sim
