// A context-parallel ring beside TP = 8 on 8-GPU nodes, derived by hand: the heads each GPU
// computes, the levels its ring uses and the bytes each NIC carries.
#include <gtest/gtest.h>

#include "core/workload/parallel_degrees.h"
#include "planner/evaluate_plan.h"
#include "planner/strategy.h"
#include "tests/planner/test_cluster.h"

namespace meshplan::planner {
namespace {

TEST(TensorParallel, ARingBesideTp8CrossesNodesOnEveryHop) {
  // 4 nodes x 8 GPUs, TP 8: the CP group is one GPU per node (4 ranks). A 64K-token layer of 64
  // query and 8 KV heads of 128: each GPU computes 8 query heads and 1 KV head. A CP rank's KV
  // shard is 16K tokens x 1 KV head x 128 x 2 (K and V) x 2 bytes (bf16) = 8 MiB; the forward
  // ring sends 3 of them, every hop to another node: 24 MiB per GPU on its NIC (ib), none on
  // NVLink.
  Workload w;
  w.seq_len = 64 * 1024;
  w.pass = Pass::kForward;
  ASSERT_TRUE(DivideHeads(w, 8).ok());
  EXPECT_EQ(w.q_heads, 8);
  EXPECT_EQ(w.kv_heads, 1);
  auto cluster = ContextParallelCluster(testing::SmallCluster(8, 4), {8, 1});
  ASSERT_TRUE(cluster.ok());
  const PlanContext ctx(w, *cluster);
  SchemeParams p;
  p.scheme = Scheme("ring");
  p.layout = Layout::kZigzag;
  p.ring = 4;
  p.placement = {"cp"};
  const Estimate e = EvaluatePlan(ctx, *MakeStrategy(p.scheme), p);
  ASSERT_TRUE(e.valid) << e.reason;
  constexpr double kMiB = 1024.0 * 1024.0;
  ASSERT_EQ(e.level_bytes.size(), 2u);
  EXPECT_DOUBLE_EQ(e.level_bytes[0], 0.0);          // nvlink
  EXPECT_DOUBLE_EQ(e.level_bytes[1], 24.0 * kMiB);  // ib: one NIC per CP rank
  // Without TP the same layer's ring of 32 GPUs keeps 7 of 8 hops in a node: 31 shards of 2K
  // tokens x 8 KV heads x 128 x 2 x 2 = 8 MiB each; the GPU at a node's edge sends all of them
  // over its NIC (248 MiB), the others over NVLink.
  Workload whole;
  whole.seq_len = 64 * 1024;
  whole.pass = Pass::kForward;
  const Topology four_nodes = testing::SmallCluster(8, 4);
  const PlanContext ctx32(whole, four_nodes);
  p.ring = 32;
  const Estimate e32 = EvaluatePlan(ctx32, *MakeStrategy(p.scheme), p);
  ASSERT_TRUE(e32.valid) << e32.reason;
  EXPECT_DOUBLE_EQ(e32.level_bytes[1], 31 * 8.0 * kMiB);
}

}  // namespace
}  // namespace meshplan::planner
