// Faults end the whole run within a bounded time, with an error naming the rank and the op:
// a rank that fails, and a peer that never answers.
#include <gtest/gtest.h>

#include <chrono>

#include "executor/execute.h"
#include "executor/kernels/reference.h"
#include "planner/schemes/registry.h"
#include "planner/strategy.h"

namespace meshplan::exec {
namespace {

struct Fixture {
  Workload w;
  Topology t;
  Schedule schedule;
  AttentionTensors<float> inputs;
};

Fixture Make(Scheme scheme) {
  Fixture f;
  f.w.seq_len = 128;
  f.w.q_heads = 4;
  f.w.kv_heads = 2;
  f.w.head_dim = 8;
  f.w.dtype = DType::kFp32;
  f.w.pass = Pass::kForwardBackward;
  f.t.name = "four";
  f.t.source = "test";
  f.t.gpu.model = "cpu";
  f.t.gpu.memory_bytes = 1e12;
  f.t.gpu.hbm_bytes_per_s = 1e12;
  f.t.gpu.peak_tflops = {{DType::kFp32, 10}};
  f.t.gpu.attention_efficiency = {{1, 1.0}};
  f.t.levels.push_back({"link", LinkKind::kSwitch, 4, 1e10, 1e-6, 1.0, {}, {}});
  const planner::PlanContext ctx(f.w, f.t);
  SchemeParams p;
  p.scheme = scheme;
  p.layout = Layout::kZigzag;
  p.ring = 4;
  p.tile_a = 2;
  p.tile_b = 2;
  p.placement = CanonicalPlacement(planner::RankDims(p));
  f.schedule = *planner::MakeStrategy(scheme)->Expand(ctx, p);
  const AttentionTensors<double> d = RandomInputs(f.w, 5);
  f.inputs.q = ToFloat(d.q);
  f.inputs.k = ToFloat(d.k);
  f.inputs.v = ToFloat(d.v);
  f.inputs.d_o = ToFloat(d.d_o);
  return f;
}

double SecondsOf(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

TEST(ExecutorFaults, AFailingRankStopsEveryRankAndIsNamed) {
  for (Scheme scheme : {Scheme("ring"), Scheme("mesh"), Scheme("attention2d")}) {
    Fixture f = Make(scheme);
    ExecuteConfig config;
    config.run.recv_timeout =
        std::chrono::milliseconds(20000);  // the abort, not the timeout, must end it
    config.run.fail_rank = 2;
    config.run.fail_op = 3;
    const auto start = Clock::now();
    auto r = Execute(f.schedule, f.w, f.inputs, config);
    ASSERT_FALSE(r.ok()) << SchemeName(scheme);
    EXPECT_NE(r.status().message().find("rank 2 op 3"), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find("injected failure"), std::string::npos)
        << r.status().message();
    EXPECT_LT(SecondsOf(start), 5.0) << SchemeName(scheme);
  }
}

TEST(ExecutorFaults, APeerThatNeverAnswersEndsTheRunAtTheDeadline) {
  for (Scheme scheme : {Scheme("ring"), Scheme("allgather-kv")}) {
    Fixture f = Make(scheme);
    ExecuteConfig config;
    config.run.recv_timeout = std::chrono::milliseconds(300);
    config.run.silent_rank = 1;
    const auto start = Clock::now();
    auto r = Execute(f.schedule, f.w, f.inputs, config);
    ASSERT_FALSE(r.ok()) << SchemeName(scheme);
    // Some rank's receive timed out (which one first depends on thread timing: rank 1 itself may
    // be waiting for a peer that waits for it); the error names that rank, its op and the peer.
    const std::string& m = r.status().message();
    EXPECT_EQ(m.rfind("rank ", 0), 0u) << m;
    EXPECT_NE(m.find(" op "), std::string::npos) << m;
    EXPECT_NE(m.find("recv from rank "), std::string::npos) << m;
    EXPECT_NE(m.find("no message within the deadline"), std::string::npos) << m;
    EXPECT_LT(SecondsOf(start), 5.0) << SchemeName(scheme);
  }
}

TEST(ExecutorFaults, WithoutFaultsTheSameRunsSucceed) {
  for (Scheme scheme :
       {Scheme("ring"), Scheme("mesh"), Scheme("attention2d"), Scheme("allgather-kv")}) {
    Fixture f = Make(scheme);
    auto r = Execute(f.schedule, f.w, f.inputs, {});
    EXPECT_TRUE(r.ok()) << SchemeName(scheme) << ": " << r.status().message();
  }
}

}  // namespace
}  // namespace meshplan::exec

namespace meshplan::exec {
namespace {

// The same faults with every rank in one engine (transport local: copies between ranks that
// rendezvous like CUDA device copies instead of messages).
TEST(ExecutorFaults, OneEngineForEveryRankNamesAFailingRankAndASilentPeer) {
  for (Scheme scheme : {Scheme("ring"), Scheme("mesh")}) {
    Fixture f = Make(scheme);
    ExecuteConfig config;
    config.transport = TransportKind::kLocal;
    config.run.fail_rank = 2;
    config.run.fail_op = 3;
    auto failed = Execute(f.schedule, f.w, f.inputs, config);
    ASSERT_FALSE(failed.ok()) << SchemeName(scheme);
    EXPECT_NE(failed.status().message().find("rank 2 op 3"), std::string::npos)
        << failed.status().message();
    EXPECT_NE(failed.status().message().find("injected failure"), std::string::npos)
        << failed.status().message();

    config.run.fail_rank = -1;
    config.run.fail_op = -1;
    config.run.silent_rank = 1;
    config.run.recv_timeout = std::chrono::milliseconds(300);
    const auto start = Clock::now();
    auto silent = Execute(f.schedule, f.w, f.inputs, config);
    ASSERT_FALSE(silent.ok()) << SchemeName(scheme);
    const std::string& m = silent.status().message();
    EXPECT_EQ(m.rfind("rank ", 0), 0u) << m;
    EXPECT_NE(m.find("recv from rank 1"), std::string::npos) << m;
    EXPECT_NE(m.find("no message within the deadline"), std::string::npos) << m;
    EXPECT_LT(SecondsOf(start), 5.0) << SchemeName(scheme);
  }
}

}  // namespace
}  // namespace meshplan::exec
