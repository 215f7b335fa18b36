// Gathering a run's outputs at rank 0 (executor/gather.h), as `meshplan execute --transport mpi`
// does, here over in-process transports: the gathered outputs equal Execute's (threads), missing
// coverage is named, and the start barrier returns every rank's code.
#include "executor/gather.h"

#include <gtest/gtest.h>

#include <cmath>
#include <thread>

#include "executor/execute.h"
#include "executor/kernels/reference.h"
#include "executor/transport/thread_transport.h"
#include "planner/schemes/registry.h"
#include "planner/strategy.h"

namespace meshplan::exec {
namespace {

Topology FourGpus() {
  Topology t;
  t.name = "four";
  t.source = "test";
  t.gpu.model = "cpu";
  t.gpu.memory_bytes = 1e12;
  t.gpu.hbm_bytes_per_s = 1e12;
  t.gpu.peak_tflops = {{DType::kFp32, 10}};
  t.gpu.attention_efficiency = {{1, 1.0}};
  t.levels.push_back({"link", LinkKind::kSwitch, 4, 1e10, 1e-6, 1.0, {}, {}});
  return t;
}

double MaxRelativeDifference(const TensorF& a, const TensorF& b) {
  double worst = 0, scale = 0;
  for (size_t i = 0; i < a.data.size(); ++i) {
    worst = std::max(worst, std::abs(static_cast<double>(a.data[i]) - b.data[i]));
    scale = std::max(scale, std::abs(static_cast<double>(b.data[i])));
  }
  return scale > 0 ? worst / scale : worst;
}

TEST(Gather, RankOutputsGatheredAtRankZeroEqualTheThreadedRun) {
  for (Scheme scheme : {Scheme("ring"), Scheme("mesh"), Scheme("ulysses")}) {
    Workload w;
    w.batch = 2;
    w.seq_len = 128;
    w.q_heads = 4;
    w.kv_heads = 4;
    w.head_dim = 8;
    w.dtype = DType::kFp32;
    const Topology topology = FourGpus();
    const planner::PlanContext ctx(w, topology);
    SchemeParams p;
    p.scheme = scheme;
    p.layout = scheme == Scheme("ulysses") ? Layout::kContiguous : Layout::kZigzag;
    p.ring = 4;
    p.ulysses = 4;
    p.tile_a = 2;
    p.tile_b = 2;
    if (scheme == Scheme("ulysses")) p.ring = 1;
    if (scheme != Scheme("ulysses")) p.ulysses = 1;
    p.placement = CanonicalPlacement(planner::RankDims(p));
    const auto strategy = planner::MakeStrategy(scheme);
    ASSERT_TRUE(strategy->Evaluate(ctx, p).valid)
        << SchemeName(scheme) << ": " << strategy->Evaluate(ctx, p).reason;
    auto schedule = strategy->Expand(ctx, p);
    ASSERT_TRUE(schedule.ok()) << schedule.status().message();
    const AttentionTensors<double> d = RandomInputs(w, 11);
    AttentionTensors<float> in;
    in.q = ToFloat(d.q);
    in.k = ToFloat(d.k);
    in.v = ToFloat(d.v);
    in.d_o = ToFloat(d.d_o);

    auto expected = Execute(*schedule, w, in, {});
    ASSERT_TRUE(expected.ok()) << expected.status().message();

    auto transports = MakeThreadTransports(4);
    std::vector<Status> status(4);
    Result<GatheredRun> at_zero = Status::Internal("not run");
    std::vector<std::thread> threads;
    const auto deadline = Clock::now() + std::chrono::seconds(20);
    for (int r = 0; r < 4; ++r) {
      threads.emplace_back([&, r] {
        Transport& t = *transports[r];
        auto codes = ExchangeCodes(t, 0, deadline);
        if (!codes.ok()) {
          status[r] = codes.status();
          return;
        }
        AttentionTensors<float> out = OutputTensors(w);
        std::vector<uint8_t> covered(CoverageSize(w), 0);
        std::vector<OpTiming> timings;
        status[r] = ExecuteRank(*schedule, w, in, ExecuteConfig{}, t, &out, &covered, &timings);
        if (!status[r].ok()) return;
        auto gathered = GatherOutputs(t, w, out, covered, timings, deadline);
        if (r == 0) {
          at_zero = std::move(gathered);
        } else if (!gathered.ok()) {
          status[r] = gathered.status();
        }
      });
    }
    for (auto& t : threads) t.join();
    for (int r = 0; r < 4; ++r)
      ASSERT_TRUE(status[r].ok()) << "rank " << r << ": " << status[r].message();
    ASSERT_TRUE(at_zero.ok()) << at_zero.status().message();
    const AttentionTensors<float>& got = at_zero->outputs;
    const AttentionTensors<float>& want = expected->outputs;
    EXPECT_LT(MaxRelativeDifference(got.o, want.o), 1e-6) << SchemeName(scheme);
    EXPECT_LT(MaxRelativeDifference(got.lse, want.lse), 1e-6) << SchemeName(scheme);
    EXPECT_LT(MaxRelativeDifference(got.dq, want.dq), 1e-6) << SchemeName(scheme);
    EXPECT_LT(MaxRelativeDifference(got.dk, want.dk), 1e-6) << SchemeName(scheme);
    EXPECT_LT(MaxRelativeDifference(got.dv, want.dv), 1e-6) << SchemeName(scheme);
    ASSERT_EQ(at_zero->timings.size(), 4u);
    for (int r = 0; r < 4; ++r) {
      ASSERT_EQ(at_zero->timings[r].size(), schedule->ranks[r].ops.size()) << "rank " << r;
      for (const OpTiming& op : at_zero->timings[r]) EXPECT_LE(op.start_s, op.end_s);
    }
  }
}

TEST(Gather, MissingCoverageIsNamed) {
  Workload w;
  w.seq_len = 16;
  w.q_heads = 4;
  w.kv_heads = 2;
  w.head_dim = 4;
  w.pass = Pass::kForwardBackward;
  std::vector<uint8_t> covered(CoverageSize(w), 1);
  EXPECT_TRUE(CheckCoverage(w, covered).ok());
  // dK (tensor 3) of token 5, head 1 missing; heads >= 2 of dK are not outputs at all.
  const size_t cells = static_cast<size_t>(w.seq_len * w.q_heads);
  covered[3 * cells + 5 * 4 + 3] = 0;
  EXPECT_TRUE(CheckCoverage(w, covered).ok());
  covered[3 * cells + 5 * 4 + 1] = 0;
  const Status st = CheckCoverage(w, covered);
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.message(), "no rank produced dK for token 5, head 1");
  // A forward-only run does not need the backward's outputs.
  w.pass = Pass::kForward;
  EXPECT_TRUE(CheckCoverage(w, covered).ok());
}

TEST(Gather, ExchangeCodesReturnsEveryRanksCode) {
  auto transports = MakeThreadTransports(3);
  std::vector<Result<std::vector<int>>> got(3, Status::Internal("not run"));
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r) {
    threads.emplace_back([&, r] {
      got[r] =
          ExchangeCodes(*transports[r], r == 2 ? 2 : 0, Clock::now() + std::chrono::seconds(10));
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < 3; ++r) {
    ASSERT_TRUE(got[r].ok()) << got[r].status().message();
    EXPECT_EQ(*got[r], (std::vector<int>{0, 0, 2})) << "rank " << r;
  }
  // A rank that never arrives: rank 0 fails by the deadline instead of waiting forever.
  auto lonely = MakeThreadTransports(2);
  auto alone = ExchangeCodes(*lonely[0], 0, Clock::now() + std::chrono::milliseconds(50));
  EXPECT_FALSE(alone.ok());
  EXPECT_NE(alone.status().message().find("recv from rank 1"), std::string::npos)
      << alone.status().message();
}

}  // namespace
}  // namespace meshplan::exec
