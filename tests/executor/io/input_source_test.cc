// Per-rank inputs (executor/io/input_source.h): the seeded values are a pure function of (seed,
// tensor, index), so the rows a rank generates alone are the rows of the whole-sequence inputs,
// and a run that generates per rank equals, bit for bit, a run given the whole tensors.
#include "executor/io/input_source.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <set>

#include "executor/execute.h"
#include "executor/kernels/reference.h"
#include "planner/schemes/registry.h"
#include "planner/strategy.h"
#include "tests/executor/scheme_cases.h"

namespace meshplan::exec {
namespace {

Workload Gqa(Pass pass) {
  Workload w;
  w.batch = 2;
  w.seq_len = 64;
  w.q_heads = 4;
  w.kv_heads = 2;
  w.head_dim = 8;
  w.dtype = DType::kFp32;
  w.mask = Mask::Causal();
  w.pass = pass;
  return w;
}

TEST(SeededInputSource, EveryRowIsTheWholeSequenceInputsRow) {
  const Workload w = Gqa(Pass::kForwardBackward);
  const AttentionTensors<double> whole = RandomInputs(w, 17);
  const SeededInputSource source(w, 17);
  std::vector<float> row(static_cast<size_t>(w.q_heads * w.head_dim));
  // Rows asked for out of order, as a rank with a striped or zigzag shard asks for them.
  for (int64_t b : {1, 0}) {
    for (int64_t pos : {63, 0, 31, 32, 5}) {
      source.Row(InputTensor::kQ, b, pos, row.data());
      for (int64_t e = 0; e < w.q_heads * w.head_dim; ++e) {
        ASSERT_EQ(row[e], static_cast<float>(
                              whole.q.data[static_cast<size_t>(whole.q.Index(b, pos, 0, 0) + e)]));
      }
      source.Row(InputTensor::kV, b, pos, row.data());
      for (int64_t e = 0; e < w.kv_heads * w.head_dim; ++e) {
        ASSERT_EQ(row[e], static_cast<float>(
                              whole.v.data[static_cast<size_t>(whole.v.Index(b, pos, 0, 0) + e)]));
      }
    }
  }
  const AttentionTensors<float> all = MaterializeInputs(w, source);
  EXPECT_EQ(all.k.data, ToFloat(whole.k).data);
  EXPECT_EQ(all.d_o.data, ToFloat(whole.d_o).data);
}

TEST(SeededInputValue, UniformInMinusOneToOneAndIndependentPerTensorAndSeed) {
  // 100000 draws of U[-1, 1): mean 0 with standard error sqrt(1/3 / 100000) = 0.0018, so |mean| <
  // 0.01 (5.5 sigma); variance 1/3 with standard error ~ sqrt(4/45 / 100000) = 0.00094, so within
  // 0.01 of 1/3.
  double sum = 0, sum_sq = 0;
  constexpr int kDraws = 100000;
  for (uint64_t i = 0; i < kDraws; ++i) {
    const double x = SeededInputValue(3, InputTensor::kK, i);
    ASSERT_GE(x, -1.0);
    ASSERT_LT(x, 1.0);
    sum += x;
    sum_sq += x * x;
  }
  const double mean = sum / kDraws;
  EXPECT_LT(std::abs(mean), 0.01);
  EXPECT_NEAR(sum_sq / kDraws - mean * mean, 1.0 / 3.0, 0.01);
  // The same index in other tensors and seeds gives other values (53 random bits: a collision
  // among these few has probability ~ 2^-47).
  std::set<double> seen;
  for (uint64_t seed : {0, 1, 2}) {
    for (InputTensor t : {InputTensor::kQ, InputTensor::kK, InputTensor::kV, InputTensor::kDO}) {
      for (uint64_t i : {0, 1, 1000}) seen.insert(SeededInputValue(seed, t, i));
    }
  }
  EXPECT_EQ(seen.size(), 36u);
  EXPECT_EQ(SeededInputValue(5, InputTensor::kQ, 9), SeededInputValue(5, InputTensor::kQ, 9));
}

// Outputs of `schedule` run with `inputs`, on one engine for every rank (kLocal: a deterministic
// merge order, so two runs of the same inputs agree bit for bit).
AttentionTensors<float> RunWith(const Schedule& schedule, const Workload& w,
                                const InputSource& inputs) {
  ExecuteConfig config;
  config.transport = TransportKind::kLocal;
  config.run.recv_timeout = std::chrono::milliseconds(20000);
  auto run = Execute(schedule, w, inputs, config);
  EXPECT_TRUE(run.ok()) << run.status().message();
  return run.ok() ? run->outputs : AttentionTensors<float>{};
}

void ExpectBitIdentical(const TensorF& a, const TensorF& b, const std::string& what) {
  ASSERT_EQ(a.data.size(), b.data.size()) << what;
  EXPECT_EQ(std::memcmp(a.data.data(), b.data.data(), a.data.size() * sizeof(float)), 0) << what;
}

TEST(SeededInputSource, PerRankGenerationIsBitIdenticalToTheWholeSequencePath) {
  const Workload w = Gqa(Pass::kForwardBackward);
  const Topology topology = Cluster(4);
  const planner::PlanContext ctx(w, topology);
  for (const SchemeParams& base :
       {Params(Scheme("ring"), Layout::kZigzag), Params(Scheme("mesh"), Layout::kZigzag)}) {
    SchemeParams p = base;
    if (p.scheme == Scheme("ring")) p.ring = 4;
    if (p.scheme == Scheme("mesh")) {
      p.tile_a = 2;
      p.tile_b = 2;
    }
    p.placement = CanonicalPlacement(planner::RankDims(p));
    const auto strategy = planner::MakeStrategy(p.scheme);
    auto schedule = strategy->Expand(ctx, p);
    ASSERT_TRUE(schedule.ok()) << schedule.status().message();
    const AttentionTensors<double> whole = RandomInputs(w, 23);
    AttentionTensors<float> in;
    in.q = ToFloat(whole.q);
    in.k = ToFloat(whole.k);
    in.v = ToFloat(whole.v);
    in.d_o = ToFloat(whole.d_o);
    const AttentionTensors<float> a = RunWith(*schedule, w, TensorInputSource(in));
    const AttentionTensors<float> b = RunWith(*schedule, w, SeededInputSource(w, 23));
    const std::string what(SchemeName(p.scheme));
    ExpectBitIdentical(a.o, b.o, what + " O");
    ExpectBitIdentical(a.lse, b.lse, what + " LSE");
    ExpectBitIdentical(a.dq, b.dq, what + " dQ");
    ExpectBitIdentical(a.dk, b.dk, what + " dK");
    ExpectBitIdentical(a.dv, b.dv, what + " dV");
  }
}

TEST(Execute, WithoutKeptOutputsStillChecksCoverageAndCopiesNothing) {
  const Workload w = Gqa(Pass::kForward);
  const Topology topology = Cluster(2);
  const planner::PlanContext ctx(w, topology);
  SchemeParams p = Params(Scheme("ring"), Layout::kZigzag);
  p.ring = 2;
  p.placement = CanonicalPlacement(planner::RankDims(p));
  auto schedule = planner::MakeStrategy(p.scheme)->Expand(ctx, p);
  ASSERT_TRUE(schedule.ok()) << schedule.status().message();
  ExecuteConfig config;
  config.keep_outputs = false;
  auto run = Execute(*schedule, w, SeededInputSource(w, 1), config);
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_TRUE(run->outputs.o.data.empty());
  EXPECT_EQ(run->timings.size(), 2u);
}

}  // namespace
}  // namespace meshplan::exec
