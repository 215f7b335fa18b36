// The schedule checker catches each kind of malformed schedule (tiny hand-made schedules).
#include "planner/schedule_check.h"

#include <gtest/gtest.h>

#include <memory>

namespace meshplan::planner {
namespace {

// 2 ranks, S = 8, full mask, 1 head of dim 1, bf16: 2 contiguous shards of 4 tokens, so every
// block has 4*4 = 16 pairs and a forward flops count of 4*B*pairs*heads*d = 64.
class SchedCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    workload_.batch = 1;
    workload_.seq_len = 8;
    workload_.q_heads = 2;
    workload_.kv_heads = 1;
    workload_.head_dim = 1;
    workload_.mask = Mask::Full();
    workload_.pass = Pass::kForward;
    NetworkLevel level;
    level.name = "nvlink";
    level.group_size = 2;
    level.bandwidth_bytes_per_s = 1e11;
    topology_.name = "test";
    topology_.levels = {level};
    ctx_ = std::make_unique<PlanContext>(workload_, topology_);
  }

  static Op Compute(int q, int kv, int head_begin, int head_count) {
    Op op;
    op.kind = OpKind::kCompute;
    op.q_shard = q;
    op.kv_shard = kv;
    op.head_begin = head_begin;
    op.head_count = head_count;
    op.flops = 4.0 * 16 * head_count;  // 4 * B(1) * pairs(16) * heads * d(1)
    return op;
  }
  static Op Message(OpKind kind, int peer, int64_t bytes) {
    Op op;
    op.kind = kind;
    op.stream = kind == OpKind::kSend ? StreamId::kSend : StreamId::kRecv;
    op.peer = peer;
    op.tensors = kTensorKV;
    op.bytes = bytes;
    op.tag = 7;
    return op;
  }

  // A valid two-rank ring: compute the own block, exchange KV, compute the other block.
  Schedule Valid() const {
    Schedule s;
    s.num_ranks = 2;
    s.layout = ShardLayout{Layout::kContiguous, 8, 2, 1};
    s.ranks.resize(2);
    for (int r = 0; r < 2; ++r) {
      RankProgram& p = s.ranks[r];
      const uint32_t recv = p.Add(Message(OpKind::kRecv, 1 - r, 16));
      p.Add(Message(OpKind::kSend, 1 - r, 16));
      p.Add(Compute(r, r, 0, 2));
      p.Add(Compute(r, 1 - r, 0, 2), {recv});
    }
    return s;
  }

  Workload workload_;
  Topology topology_;
  std::unique_ptr<PlanContext> ctx_;
};

TEST_F(SchedCheckTest, AcceptsValidSchedule) {
  const Schedule s = Valid();
  EXPECT_TRUE(CheckSchedule(s, *ctx_).ok()) << CheckSchedule(s, *ctx_).message();
  const ScheduleSummary sum = Summarize(s);
  EXPECT_EQ(sum.ops, 8);
  EXPECT_EQ(sum.sends, 2);
  EXPECT_EQ(sum.recvs, 2);
  EXPECT_EQ(sum.computes, 4);
  EXPECT_EQ(sum.bytes_sent[0], 16);
  EXPECT_EQ(sum.bytes_received[1], 16);
  EXPECT_EQ(sum.flops[1], 2 * 128.0);
  EXPECT_DOUBLE_EQ(FlopsImbalance(sum), 1.0);
}

TEST_F(SchedCheckTest, CatchesUnmatchedSend) {
  Schedule s = Valid();
  s.ranks[1].ops[0].kind = OpKind::kMerge;  // rank 1 no longer receives
  s.ranks[1].ops[0].stream = StreamId::kCompute;
  const Status st = CheckSchedule(s, *ctx_);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("rank 0 op 1 (send)"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("no matching recv"), std::string::npos) << st.message();
}

TEST_F(SchedCheckTest, CatchesUnmatchedRecv) {
  Schedule s = Valid();
  s.ranks[0].ops[1].kind = OpKind::kMerge;  // rank 0 no longer sends
  s.ranks[0].ops[1].stream = StreamId::kCompute;
  const Status st = CheckSchedule(s, *ctx_);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("rank 1 op 0 (recv): recv from rank 0 has no matching send"),
            std::string::npos)
      << st.message();
}

TEST_F(SchedCheckTest, CatchesMismatchedBytes) {
  Schedule s = Valid();
  s.ranks[1].ops[1].bytes = 17;
  const Status st = CheckSchedule(s, *ctx_);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("rank 1 op 1 (send)"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("17 bytes"), std::string::npos) << st.message();
}

TEST_F(SchedCheckTest, CatchesMismatchedTag) {
  Schedule s = Valid();
  s.ranks[0].ops[0].tag = 8;
  EXPECT_FALSE(CheckSchedule(s, *ctx_).ok());
}

TEST_F(SchedCheckTest, CatchesDeadlockOfTwoRanksReceivingFirst) {
  Schedule s = Valid();
  for (RankProgram& p : s.ranks) {  // each send now waits for the rank's own recv
    p.ops[1].dep_begin = static_cast<uint32_t>(p.deps.size());
    p.ops[1].dep_count = 1;
    p.deps.push_back(0);
  }
  const Status st = CheckSchedule(s, *ctx_);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("deadlock (2 ranks stuck)"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("op 1 (send to 1, send stream) waits for op 0"), std::string::npos)
      << st.message();
}

TEST_F(SchedCheckTest, CatchesStreamOrderDeadlock) {
  // Both sends sit behind a recv on the same stream: FIFO order alone deadlocks.
  Schedule s = Valid();
  for (RankProgram& p : s.ranks) p.ops[1].stream = StreamId::kRecv;
  const Status st = CheckSchedule(s, *ctx_);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("deadlock"), std::string::npos) << st.message();
}

TEST_F(SchedCheckTest, CatchesMissingBlock) {
  Schedule s = Valid();
  s.ranks[0].ops.pop_back();  // block (0, 1) is never computed
  const Status st = CheckSchedule(s, *ctx_);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("block (0, 1)"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("never computed in the forward pass"), std::string::npos)
      << st.message();
}

TEST_F(SchedCheckTest, CatchesBlockComputedTwice) {
  Schedule s = Valid();
  s.ranks[1].Add(Compute(0, 0, 1, 1));  // head 1 of block (0, 0) again
  const Status st = CheckSchedule(s, *ctx_);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("computed twice"), std::string::npos) << st.message();
}

TEST_F(SchedCheckTest, AcceptsHeadSplitAndCatchesMissingHeads) {
  Schedule s = Valid();
  s.ranks[0].ops[2] = Compute(0, 0, 0, 1);  // rank 0: head 0 of block (0, 0)
  s.ranks[1].Add(Compute(0, 0, 1, 1));      // rank 1: head 1 of it
  EXPECT_TRUE(CheckSchedule(s, *ctx_).ok()) << CheckSchedule(s, *ctx_).message();
  s.ranks[1].ops.pop_back();
  const Status st = CheckSchedule(s, *ctx_);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("heads [1, 2) never computed"), std::string::npos) << st.message();
}

TEST_F(SchedCheckTest, CatchesEmptyBlockComputed) {
  workload_.mask = Mask::Causal();  // block (0, 1) of 2 contiguous shards is empty
  ctx_ = std::make_unique<PlanContext>(workload_, topology_);
  Schedule s = Valid();
  // Diagonal blocks keep 4*5/2 = 10 pairs: 4 * 10 pairs * 2 heads = 80 flops.
  for (RankProgram& p : s.ranks) p.ops[2].flops = 80;
  const Status st = CheckSchedule(s, *ctx_);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("has no unmasked pairs but is computed"), std::string::npos)
      << st.message();
}

TEST_F(SchedCheckTest, CatchesWrongFlops) {
  Schedule s = Valid();
  s.ranks[1].ops[2].flops *= 1.01;
  const Status st = CheckSchedule(s, *ctx_);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("rank 1 op 2 (compute)"), std::string::npos) << st.message();
}

TEST_F(SchedCheckTest, CatchesBadDep) {
  Schedule s = Valid();
  s.ranks[1].deps[0] = 3;  // op 3 depends on itself
  const Status st = CheckSchedule(s, *ctx_);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("rank 1 op 3 (compute): dep on op 3 does not point backwards"),
            std::string::npos)
      << st.message();
}

TEST_F(SchedCheckTest, CatchesPhaseOutsidePass) {
  Schedule s = Valid();
  s.ranks[0].ops[2].phase = Phase::kBackward;
  EXPECT_FALSE(CheckSchedule(s, *ctx_).ok());
}

// Both ranks all-gather KV then compute: valid; then the members disagree.
TEST_F(SchedCheckTest, ChecksCollectives) {
  Schedule s;
  s.num_ranks = 2;
  s.layout = ShardLayout{Layout::kContiguous, 8, 2, 1};
  s.groups = {{0, 1}};
  s.ranks.resize(2);
  for (int r = 0; r < 2; ++r) {
    Op gather;
    gather.kind = OpKind::kAllGather;
    gather.stream = StreamId::kCollective;
    gather.group = 0;
    gather.tensors = kTensorKV;
    gather.bytes = 16;
    const uint32_t g = s.ranks[r].Add(gather);
    s.ranks[r].Add(Compute(r, 0, 0, 2), {g});
    s.ranks[r].Add(Compute(r, 1, 0, 2), {g});
  }
  ASSERT_TRUE(CheckSchedule(s, *ctx_).ok()) << CheckSchedule(s, *ctx_).message();
  EXPECT_EQ(Summarize(s).bytes_received[0], 16);

  Schedule bytes = s;
  bytes.ranks[1].ops[0].bytes = 32;
  Status st = CheckSchedule(bytes, *ctx_);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("rank 1 op 0 (all-gather): collective #0 on group 0"),
            std::string::npos)
      << st.message();

  Schedule missing = s;
  missing.ranks[1].ops[0].kind = OpKind::kMerge;
  missing.ranks[1].ops[0].stream = StreamId::kCompute;
  st = CheckSchedule(missing, *ctx_);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("not issued by rank 1"), std::string::npos) << st.message();

  Schedule outsider = s;
  outsider.groups = {{0}, {1}};
  outsider.ranks[1].ops[0].group = 0;
  st = CheckSchedule(outsider, *ctx_);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("not a member of group 0"), std::string::npos) << st.message();
}

// A collective that one member reaches only after a recv that waits on the other member's
// post-collective send: a deadlock across a collective.
TEST_F(SchedCheckTest, CatchesCollectiveDeadlock) {
  Schedule s;
  s.num_ranks = 2;
  s.layout = ShardLayout{Layout::kContiguous, 8, 2, 1};
  s.groups = {{0, 1}};
  s.ranks.resize(2);
  Op gather;
  gather.kind = OpKind::kAllGather;
  gather.stream = StreamId::kCollective;
  gather.group = 0;
  gather.bytes = 16;
  const uint32_t recv = s.ranks[0].Add(Message(OpKind::kRecv, 1, 16));
  s.ranks[0].Add(gather, {recv});
  const uint32_t g1 = s.ranks[1].Add(gather);
  s.ranks[1].Add(Message(OpKind::kSend, 0, 16), {g1});
  for (int r = 0; r < 2; ++r) {
    s.ranks[r].Add(Compute(r, 0, 0, 2));
    s.ranks[r].Add(Compute(r, 1, 0, 2));
  }
  const Status st = CheckSchedule(s, *ctx_);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("waits for group 0 (1 of 2 members arrived)"), std::string::npos)
      << st.message();
}

TEST(SchedImbalanceTest, MaxOverMean) {
  EXPECT_DOUBLE_EQ(Imbalance({1, 1, 2, 4}), 2.0);  // mean 2, max 4
  EXPECT_DOUBLE_EQ(Imbalance({}), 1.0);
  EXPECT_DOUBLE_EQ(Imbalance({0, 0}), 1.0);
}

}  // namespace
}  // namespace meshplan::planner
