// Mesh-Attention tile assignment against the facts of ALGORITHMS.md ("facts read off the paper's
// figures") and against its own defining properties.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "planner/mesh/assignment.h"

namespace meshplan::planner::mesh {
namespace {

using V = std::vector<int64_t>;

TEST(MeshAssignment, GoldenN15A3B5Rank4) {
  const MeshShape s{15, 3, 5};
  EXPECT_EQ(QGroup(s, 4), (V{3, 4, 5}));
  EXPECT_EQ(KvGroup(s, 4), (V{1, 4, 7, 10, 13}));
  V q, kv;
  for (int64_t k = 0; k < 3; ++k) q.push_back(QSlotShard(s, 4, k));
  for (int64_t k = 0; k < 5; ++k) kv.push_back(KvSlotShard(s, 4, k));
  EXPECT_EQ(q, (V{4, 5, 3}));
  EXPECT_EQ(kv, (V{4, 7, 10, 13, 1}));
  EXPECT_EQ(QSendPeer(s, 4), 3);
  EXPECT_EQ(QRecvPeer(s, 4), 5);
  EXPECT_EQ(KvSendPeer(s, 4), 1);
  EXPECT_EQ(KvRecvPeer(s, 4), 7);
}

TEST(MeshAssignment, GoldenN9A3B3Rank3) {
  const MeshShape s{9, 3, 3};
  // Rows Q3, Q4, Q5; columns KV3, KV6, KV0.
  EXPECT_EQ(QSlotShard(s, 3, 0), 3);
  EXPECT_EQ(QSlotShard(s, 3, 1), 4);
  EXPECT_EQ(QSlotShard(s, 3, 2), 5);
  EXPECT_EQ(KvSlotShard(s, 3, 0), 3);
  EXPECT_EQ(KvSlotShard(s, 3, 1), 6);
  EXPECT_EQ(KvSlotShard(s, 3, 2), 0);
  // The matrix's global column order 0 3 6 | 1 4 7 | 2 5 8: columns j with the same j mod a go to
  // the same tile column, so rank 3 (tile column 0) computes exactly Q3..Q5 x {KV0, KV3, KV6}.
  for (int64_t i = 0; i < 9; ++i) {
    for (int64_t j = 0; j < 9; ++j) {
      const bool mine = i >= 3 && i <= 5 && j % 3 == 0;
      EXPECT_EQ(AssignedRank(s, i, j) == 3, mine) << i << "," << j;
    }
  }
}

TEST(MeshAssignment, OneRowTileIsRing) {
  const MeshShape s{6, 1, 6};
  for (int64_t i = 0; i < 6; ++i) {
    for (int64_t j = 0; j < 6; ++j) EXPECT_EQ(AssignedRank(s, i, j), i);
    EXPECT_EQ(QGroup(s, i), (V{i}));
    EXPECT_EQ(QSendPeer(s, i), i);
    // KV ring of Ring-Attention: i sends to i-1, receives from i+1; slot k holds KV_{i+k}.
    EXPECT_EQ(KvSendPeer(s, i), (i + 5) % 6);
    EXPECT_EQ(KvRecvPeer(s, i), (i + 1) % 6);
    for (int64_t k = 0; k < 6; ++k) EXPECT_EQ(KvSlotShard(s, i, k), (i + k) % 6);
  }
}

struct Shape {
  int64_t a, b;
};

class MeshAssignmentShapes : public ::testing::TestWithParam<Shape> {};

TEST_P(MeshAssignmentShapes, BlocksGoToGroupsHoldingBothShards) {
  const MeshShape s{GetParam().a * GetParam().b, GetParam().a, GetParam().b};
  std::vector<int64_t> blocks_per_rank(static_cast<size_t>(s.n), 0);
  for (int64_t i = 0; i < s.n; ++i) {
    for (int64_t j = 0; j < s.n; ++j) {
      const int64_t r = AssignedRank(s, i, j);
      ASSERT_GE(r, 0);
      ASSERT_LT(r, s.n);
      ++blocks_per_rank[static_cast<size_t>(r)];
      const V qg = QGroup(s, r), kg = KvGroup(s, r);
      EXPECT_NE(std::find(qg.begin(), qg.end(), i), qg.end()) << "Q owner " << i << " rank " << r;
      EXPECT_NE(std::find(kg.begin(), kg.end(), j), kg.end()) << "KV owner " << j << " rank " << r;
    }
  }
  for (int64_t r = 0; r < s.n; ++r) {
    EXPECT_EQ(blocks_per_rank[static_cast<size_t>(r)], s.a * s.b);
    // Local Q-KV property and slot maps covering exactly the rank's tile.
    EXPECT_EQ(AssignedRank(s, r, r), r);
    EXPECT_EQ(QSlotShard(s, r, 0), r);
    EXPECT_EQ(KvSlotShard(s, r, 0), r);
    for (int64_t k = 0; k < s.a; ++k) {
      for (int64_t l = 0; l < s.b; ++l) {
        EXPECT_EQ(AssignedRank(s, QSlotShard(s, r, k), KvSlotShard(s, r, l)), r);
      }
    }
    // Ring structure: what r sends as slot k is the send peer's slot k+1, and the peers invert.
    EXPECT_EQ(QRecvPeer(s, QSendPeer(s, r)), r);
    EXPECT_EQ(KvRecvPeer(s, KvSendPeer(s, r)), r);
    for (int64_t k = 0; k + 1 < s.a; ++k) {
      EXPECT_EQ(QSlotShard(s, QSendPeer(s, r), k + 1), QSlotShard(s, r, k));
    }
    for (int64_t k = 0; k + 1 < s.b; ++k) {
      EXPECT_EQ(KvSlotShard(s, KvSendPeer(s, r), k + 1), KvSlotShard(s, r, k));
    }
    // The last slot wraps to the peer's own shard (end of a reduce chain).
    EXPECT_EQ(QSlotShard(s, r, s.a - 1), QSendPeer(s, r));
    EXPECT_EQ(QSlotShard(s, r, s.a - 1), QSlotShard(s, QSendPeer(s, r), 0));
    EXPECT_EQ(KvSlotShard(s, r, s.b - 1), KvSlotShard(s, KvSendPeer(s, r), 0));
  }
}

INSTANTIATE_TEST_SUITE_P(Mesh, MeshAssignmentShapes,
                         ::testing::Values(Shape{1, 1}, Shape{1, 5}, Shape{5, 1}, Shape{2, 2},
                                           Shape{2, 4}, Shape{4, 2}, Shape{3, 5}, Shape{5, 3},
                                           Shape{4, 4}, Shape{8, 2}));

}  // namespace
}  // namespace meshplan::planner::mesh
