// TP and DP beside context parallelism (core/workload/parallel_degrees.h), derived by hand.
#include "core/workload/parallel_degrees.h"

#include <gtest/gtest.h>

#include "tests/planner/test_cluster.h"

namespace meshplan {
namespace {

// 4 nodes of 8 GPUs (nvlink 8, ib 4).
Topology FourNodes() { return testing::SmallCluster(8, 4); }

TEST(ParallelDegrees, TpTakesTheInnermostGpusOfANode) {
  // TP 8 on 8-GPU nodes: each node holds one CP rank; the CP group is one GPU per node, 4 GPUs,
  // each keeping its own links (400 GB/s NVLink, 50 GB/s NIC).
  auto cp = ContextParallelCluster(FourNodes(), {8, 1});
  ASSERT_TRUE(cp.ok()) << cp.status().message();
  EXPECT_EQ(cp->num_gpus(), 4);
  EXPECT_EQ(cp->levels[0].group_size, 1);
  EXPECT_EQ(cp->levels[1].group_size, 4);
  EXPECT_DOUBLE_EQ(cp->levels[1].bandwidth_bytes_per_s, 50e9);
  EXPECT_DOUBLE_EQ(cp->gpu.memory_bytes, 80e9);  // a GPU's memory is its own
  // TP 2: 4 CP ranks per node, 16 in all.
  auto tp2 = ContextParallelCluster(FourNodes(), {2, 1});
  ASSERT_TRUE(tp2.ok());
  EXPECT_EQ(tp2->levels[0].group_size, 4);
  EXPECT_EQ(tp2->num_gpus(), 16);
}

TEST(ParallelDegrees, DpTakesTheOutermostGroups) {
  // DP 2 of 4 nodes: each replica has 2 nodes; with TP 8, a CP group of 2 GPUs.
  auto cp = ContextParallelCluster(FourNodes(), {8, 2});
  ASSERT_TRUE(cp.ok());
  EXPECT_EQ(cp->levels[1].group_size, 2);
  EXPECT_EQ(cp->num_gpus(), 2);
  // DP 8 of 4 nodes x 8 GPUs, no TP: every node is 2 replicas of 4 GPUs.
  auto dp8 = ContextParallelCluster(FourNodes(), {1, 8});
  ASSERT_TRUE(dp8.ok()) << dp8.status().message();
  EXPECT_EQ(dp8->levels[1].group_size, 1);
  EXPECT_EQ(dp8->levels[0].group_size, 4);
  EXPECT_EQ(ParallelDegrees({8, 2}).Describe(2), "TP 8 x CP 2 x DP 2 = 32 GPUs");
}

TEST(ParallelDegrees, ImpossibleDegreesAreOneLineNamingTheFlag) {
  auto tp3 = ContextParallelCluster(FourNodes(), {3, 1});
  ASSERT_FALSE(tp3.ok());
  EXPECT_EQ(tp3.status().message(),
            "--tp: 3 does not divide the 8 GPUs of a 'nvlink' group (TP stays inside a node)");
  auto tp16 = ContextParallelCluster(FourNodes(), {16, 1});
  EXPECT_FALSE(tp16.ok());
  auto dp3 = ContextParallelCluster(FourNodes(), {1, 3});
  ASSERT_FALSE(dp3.ok());
  EXPECT_EQ(dp3.status().message().rfind("--dp: 3 replicas do not divide", 0), 0u)
      << dp3.status().message();
  auto dp64 = ContextParallelCluster(FourNodes(), {1, 64});
  ASSERT_FALSE(dp64.ok());
  EXPECT_NE(dp64.status().message().find("need more than the cluster's 32 GPUs"), std::string::npos)
      << dp64.status().message();
  EXPECT_FALSE(ContextParallelCluster(FourNodes(), {0, 1}).ok());
  Topology shared = FourNodes();
  shared.gpu.ranks_per_device = 2;
  auto refused = ContextParallelCluster(shared, {2, 1});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("ranks_per_device"), std::string::npos);
}

TEST(ParallelDegrees, TpDividesTheHeads) {
  Workload w;  // 64 query heads, 8 KV heads
  ASSERT_TRUE(DivideHeads(w, 8).ok());
  EXPECT_EQ(w.q_heads, 8);
  EXPECT_EQ(w.kv_heads, 1);
  Workload gqa;
  const Status st = DivideHeads(gqa, 16);  // 64 / 16 = 4 query heads, but 8 KV heads over 16
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message(),
            "--tp: 16 does not divide the 8 KV heads (meshplan does not replicate KV heads "
            "across TP ranks)");
  Workload odd;
  odd.q_heads = 12;
  odd.kv_heads = 4;
  EXPECT_EQ(DivideHeads(odd, 8).message(), "--tp: 8 does not divide the 12 query heads");
}

}  // namespace
}  // namespace meshplan
