// The device launch order (executor/device/launch_order.h) of every schedule the search can
// produce on small clusters: every op exactly once, after its deps and the earlier ops of its
// stream, both ends of every send/receive pair in one exchange step, every member of every
// collective instance in one exchange step. Matching is recomputed here from the schedule
// contract (the k-th send from A to B pairs with the k-th receive on B from A).
#include "executor/device/launch_order.h"

#include <gtest/gtest.h>

#include <map>

#include "planner/schemes/registry.h"
#include "planner/strategy.h"
#include "tests/planner/test_cluster.h"

namespace meshplan::exec {
namespace {

void CheckOrder(const Schedule& s, const LaunchOrder& order, const std::string& what) {
  const size_t n = static_cast<size_t>(s.num_ranks);
  std::vector<std::vector<int64_t>> step_of(n);
  for (size_t r = 0; r < n; ++r) step_of[r].assign(s.ranks[r].ops.size(), -1);
  auto place = [&](int32_t r, uint32_t i, int64_t step) {
    ASSERT_EQ(step_of[r][i], -1) << what << ": rank " << r << " op " << i << " issued twice";
    step_of[r][i] = step;
  };
  for (size_t k = 0; k < order.steps.size(); ++k) {
    const LaunchStep& st = order.steps[k];
    const int64_t step = static_cast<int64_t>(k);
    if (st.local()) {
      const OpKind kind = s.ranks[st.rank].ops[st.op].kind;
      ASSERT_TRUE(kind == OpKind::kCompute || kind == OpKind::kMerge) << what;
      place(st.rank, st.op, step);
      continue;
    }
    ASSERT_FALSE(st.pairs.empty() && st.collectives.empty()) << what << ": empty exchange step";
    for (const PairLaunch& p : st.pairs) {
      ASSERT_EQ(s.ranks[p.src].ops[p.send_op].kind, OpKind::kSend) << what;
      ASSERT_EQ(s.ranks[p.dst].ops[p.recv_op].kind, OpKind::kRecv) << what;
      place(p.src, p.send_op, step);
      place(p.dst, p.recv_op, step);
    }
    for (const CollectiveLaunch& c : st.collectives) {
      const auto& members = s.groups[c.group];
      ASSERT_EQ(c.ops.size(), members.size()) << what;
      for (size_t m = 0; m < members.size(); ++m) place(members[m], c.ops[m], step);
    }
  }
  // Every op once; deps strictly earlier; each stream in program order.
  for (size_t r = 0; r < n; ++r) {
    const RankProgram& prog = s.ranks[r];
    std::map<int, int64_t> last_on_stream;
    for (uint32_t i = 0; i < prog.ops.size(); ++i) {
      ASSERT_GE(step_of[r][i], 0) << what << ": rank " << r << " op " << i << " never issued";
      const Op& op = prog.ops[i];
      for (uint32_t d = 0; d < op.dep_count; ++d) {
        ASSERT_LT(step_of[r][prog.deps[op.dep_begin + d]], step_of[r][i])
            << what << ": dep not earlier";
      }
      const int stream = static_cast<int>(op.stream);
      if (last_on_stream.count(stream)) {
        // Consecutive point-to-point ops of a stream may share an exchange step (one NCCL group).
        ASSERT_LE(last_on_stream[stream], step_of[r][i])
            << what << ": stream order broken at rank " << r << " op " << i;
      }
      last_on_stream[stream] = step_of[r][i];
    }
  }
  // Pairs: the k-th send A->B and the k-th receive on B from A share a step.
  std::map<std::pair<int64_t, int64_t>, std::vector<int64_t>> sends, recvs;
  std::map<std::pair<int64_t, int32_t>, std::vector<std::vector<int64_t>>>
      collectives;  // (group, instance)
  for (size_t r = 0; r < n; ++r) {
    std::map<int32_t, int> instance;
    for (uint32_t i = 0; i < s.ranks[r].ops.size(); ++i) {
      const Op& op = s.ranks[r].ops[i];
      if (op.kind == OpKind::kSend)
        sends[{static_cast<int64_t>(r), op.peer}].push_back(step_of[r][i]);
      if (op.kind == OpKind::kRecv)
        recvs[{op.peer, static_cast<int64_t>(r)}].push_back(step_of[r][i]);
      if (op.kind == OpKind::kAllGather || op.kind == OpKind::kReduceScatter ||
          op.kind == OpKind::kAllToAll) {
        auto& list = collectives[{op.group, instance[op.group]++}];
        list.push_back({step_of[r][i]});
      }
    }
  }
  for (const auto& [key, list] : sends) {
    ASSERT_EQ(list, recvs[key]) << what << ": sends " << key.first << "->" << key.second
                                << " and receives differ";
  }
  for (const auto& [key, list] : collectives) {
    for (const auto& member : list)
      ASSERT_EQ(member, list.front()) << what << ": collective split across steps";
  }
}

TEST(LaunchOrder, EveryCandidateScheduleOrdersForDeviceIssue) {
  struct Case {
    int64_t gpus_per_node, nodes, seq, hq, hkv;
    Mask mask;
  };
  const std::vector<Case> cases = {
      {2, 2, 1024, 4, 4, Mask::Causal()},
      {4, 2, 2048, 8, 2, Mask::Causal()},
      {2, 3, 1536, 4, 2, Mask::Full()},
      {4, 2, 2048, 8, 2, Mask::Documents({100, 900, 48, 1000})},
      {4, 4, 4096, 16, 16, Mask::Window(700)},
  };
  int checked = 0;
  for (const Case& c : cases) {
    for (Pass pass : {Pass::kForward, Pass::kForwardBackward}) {
      const Topology t = testing::SmallCluster(c.gpus_per_node, c.nodes);
      Workload w;
      w.seq_len = c.seq;
      w.q_heads = c.hq;
      w.kv_heads = c.hkv;
      w.head_dim = 32;
      w.mask = c.mask;
      w.pass = pass;
      ASSERT_TRUE(w.Validate().ok());
      const planner::PlanContext ctx(w, t);
      for (Scheme scheme : planner::AllSchemes()) {
        const auto strategy = planner::MakeStrategy(scheme);
        for (const SchemeParams& p : strategy->Enumerate(ctx)) {
          if (!strategy->Evaluate(ctx, p).valid) continue;
          const std::string what = std::string(SchemeName(scheme)) + " " +
                                   planner::DescribeParams(p) + " " + w.Describe();
          auto schedule = strategy->Expand(ctx, p);
          ASSERT_TRUE(schedule.ok()) << what;
          auto order = BuildLaunchOrder(*schedule);
          ASSERT_TRUE(order.ok()) << what << ": " << order.status().message();
          CheckOrder(*schedule, *order, what);
          if (HasFailure()) return;
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 200);
}

// A schedule that only works with buffered sends: both ranks send first, then receive, with the
// receive on the same stream after the send. Rendezvous issue cannot order it and says so.
TEST(LaunchOrder, ScheduleNeedingBufferedSendsIsRefusedWithTheStuckOps) {
  Schedule s;
  s.num_ranks = 2;
  s.ranks.resize(2);
  for (int r = 0; r < 2; ++r) {
    Op send;
    send.kind = OpKind::kSend;
    send.stream = StreamId::kSend;
    send.peer = 1 - r;
    send.tensors = kTensorKV;
    const uint32_t first = s.ranks[r].Add(send);
    Op recv;
    recv.kind = OpKind::kRecv;
    recv.stream = StreamId::kSend;  // same stream: waits behind the unmatched send
    recv.peer = 1 - r;
    recv.tensors = kTensorKV;
    s.ranks[r].Add(recv, {first});
  }
  // Rank 0 sends to 1 while 1 sends to 0: both sends are heads, and their receives are not.
  auto order = BuildLaunchOrder(s);
  ASSERT_FALSE(order.ok());
  EXPECT_NE(order.status().message().find("cannot order the schedule"), std::string::npos)
      << order.status().message();
  EXPECT_NE(order.status().message().find("op 0 (send to 1"), std::string::npos)
      << order.status().message();
}

}  // namespace
}  // namespace meshplan::exec
