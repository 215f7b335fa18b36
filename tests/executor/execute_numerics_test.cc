// Every scheme's schedule, run for real on P in-process ranks (host backend, one engine per rank
// on its own thread, fp32 inputs, happens-before checked), computes exact attention: O, LSE,
// dQ, dK and dV match plain double-precision attention (executor/kernels/reference.h) with a
// maximum relative error (max |x - ref| / max |ref| per tensor) below 1e-5. Inputs are random with
// a fresh seed per case, printed on failure.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "executor/execute.h"
#include "executor/kernels/reference.h"
#include "planner/schemes/registry.h"
#include "planner/strategy.h"
#include "tests/executor/scheme_cases.h"

namespace meshplan::exec {
namespace {

// Runs one case for fwd and fwd+bwd; returns the number of runs checked.
void Check(const Case& c, uint64_t seed) {
  for (Pass pass : {Pass::kForward, Pass::kForwardBackward}) {
    Workload w;
    w.batch = c.batch;
    w.seq_len = 192;
    w.q_heads = c.hq;
    w.kv_heads = c.hkv;
    w.head_dim = 16;
    w.dtype = DType::kFp32;
    w.mask = c.mask;
    w.pass = pass;
    ASSERT_TRUE(w.Validate().ok());
    const Topology topology = Cluster(c.gpus);
    const planner::PlanContext ctx(w, topology);
    SchemeParams p = c.params;
    if (p.placement.empty()) p.placement = CanonicalPlacement(planner::RankDims(p));
    const auto strategy = planner::MakeStrategy(p.scheme);
    const planner::Estimate e = strategy->Evaluate(ctx, p);
    const std::string what = std::string(SchemeName(p.scheme)) + " " + planner::DescribeParams(p) +
                             " P=" + std::to_string(c.gpus) + " " + w.Describe() +
                             " seed=" + std::to_string(seed);
    ASSERT_TRUE(e.valid) << what << ": " << e.reason;
    auto schedule = strategy->Expand(ctx, p);
    ASSERT_TRUE(schedule.ok()) << what << ": " << schedule.status().message();

    AttentionTensors<double> ref = RandomInputs(w, seed);
    ReferenceForward(w, ref);
    if (HasBackward(pass)) ReferenceBackward(w, ref);
    AttentionTensors<float> in;
    in.q = ToFloat(ref.q);
    in.k = ToFloat(ref.k);
    in.v = ToFloat(ref.v);
    in.d_o = ToFloat(ref.d_o);
    ExecuteConfig config;
    config.run.recv_timeout = std::chrono::milliseconds(20000);
    config.run.check_dependencies = true;
    auto run = Execute(*schedule, w, in, config);
    ASSERT_TRUE(run.ok()) << what << ": " << run.status().message();
    EXPECT_LT(MaxRelativeError(run->outputs.o, ref.o), 1e-5) << "O " << what;
    EXPECT_LT(MaxRelativeError(run->outputs.lse, ref.lse), 1e-5) << "LSE " << what;
    if (HasBackward(pass)) {
      EXPECT_LT(MaxRelativeError(run->outputs.dq, ref.dq), 1e-5) << "dQ " << what;
      EXPECT_LT(MaxRelativeError(run->outputs.dk, ref.dk), 1e-5) << "dK " << what;
      EXPECT_LT(MaxRelativeError(run->outputs.dv, ref.dv), 1e-5) << "dV " << what;
    }
  }
}

class ExecuteNumerics : public ::testing::TestWithParam<int64_t> {};

TEST_P(ExecuteNumerics, EverySchemeMatchesPlainAttention) {
  const int64_t P = GetParam();
  std::mt19937_64 seeds(1234 + P);
  for (const Mask& mask : Masks()) {
    const std::vector<Case> cases = SchemeCases(P, mask);
    for (const Case& c : cases) {
      Check(c, seeds());
      if (HasFailure()) return;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, ExecuteNumerics, ::testing::Values(1, 2, 4, 6, 8, 16));

// Doc-zigzag (each document in 2P chunks, TransformerEngine's THD split) on uneven documents that
// are multiples of 2 x ring x U (32, 64 and 96 of the 192 tokens: 16 for P = 8, and for USP's and
// LoongTrain's rings of P/2 with U = 2), causal and bidirectional inside each, on every scheme that
// offers the layout: exact attention as above.
TEST(ExecuteNumerics, DocZigzagMatchesPlainAttention) {
  std::mt19937_64 seeds(99);
  for (bool bidirectional : {false, true}) {
    const Mask mask = Mask::Documents({32, 64, 96}, bidirectional);
    for (int64_t P : {2, 4, 8}) {
      std::vector<SchemeParams> plans;
      SchemeParams ring = Params(Scheme("ring"), Layout::kDocZigzag);
      ring.ring = P;
      plans.push_back(ring);
      ring.cache_forward = true;
      plans.push_back(ring);
      SchemeParams gather = Params(Scheme("allgather-kv"), Layout::kDocZigzag);
      gather.ring = P;
      plans.push_back(gather);
      if (P >= 4) {  // a ring of one is Ulysses' plan
        SchemeParams usp = Params(Scheme("usp"), Layout::kDocZigzag);
        usp.ulysses = 2;
        usp.ring = P / 2;
        plans.push_back(usp);
      }
      if (P / 2 >= 4) {
        SchemeParams lt = Params(Scheme("loongtrain"), Layout::kDocZigzag);
        lt.ulysses = 2;
        lt.ring = P / 2;
        lt.window = 2;
        plans.push_back(lt);
      }
      for (const SchemeParams& p : plans) {
        Check({P, p, mask, 8, 2, 1}, seeds());
        if (HasFailure()) return;
      }
    }
  }
}

}  // namespace
}  // namespace meshplan::exec
