// Every scheme's schedule, run for real on P in-process ranks, computes exact attention: O, LSE,
// dQ, dK and dV match plain double-precision attention (executor/reference.h) with a maximum
// relative error (max |x - ref| / max |ref| per tensor) below 1e-5. Inputs are random with a
// fresh seed per case, printed on failure.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "executor/execute.h"
#include "executor/reference.h"
#include "planner/strategy.h"

namespace meshplan::exec {
namespace {

Topology Cluster(int64_t gpus) {
  Topology t;
  t.name = "test";
  t.source = "test";
  t.gpu.model = "cpu";
  t.gpu.memory_bytes = 1e12;
  t.gpu.hbm_bytes_per_s = 1e12;
  t.gpu.peak_tflops = {{DType::kBf16, 100}, {DType::kFp32, 100}};
  t.gpu.attention_efficiency = {{1, 1.0}};
  t.levels.push_back({"link", LinkKind::kSwitch, gpus, 1e11, 1e-6, 1.0, {}});
  return t;
}

double MaxRelativeError(const TensorF& got, const TensorD& want) {
  double worst = 0, scale = 0;
  for (size_t i = 0; i < want.data.size(); ++i) {
    if (std::isinf(want.data[i])) {  // LSE of a row with nothing visible
      if (!(std::isinf(got.data[i]) && got.data[i] < 0)) return INFINITY;
      continue;
    }
    worst = std::max(worst, std::abs(static_cast<double>(got.data[i]) - want.data[i]));
    scale = std::max(scale, std::abs(want.data[i]));
  }
  return scale > 0 ? worst / scale : worst;
}

TensorF ToFloat(const TensorD& t) {
  TensorF f(t.batch, t.tokens, t.heads, t.dim);
  for (size_t i = 0; i < t.data.size(); ++i) f.data[i] = static_cast<float>(t.data[i]);
  return f;
}

struct Case {
  int64_t gpus;
  SchemeParams params;
  Mask mask;
  int64_t hq, hkv, batch;
};

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
    if (p.placement.empty()) p.placement = CanonicalPlacement(p.RankDims());
    const auto strategy = planner::MakeStrategy(p.scheme);
    const planner::Estimate e = strategy->Evaluate(ctx, p);
    const std::string what = std::string(SchemeName(p.scheme)) + " " + p.Describe() + " P=" +
                             std::to_string(c.gpus) + " " + w.Describe() + " seed=" + std::to_string(seed);
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
    RunOptions options;
    options.recv_timeout = std::chrono::milliseconds(20000);
    auto run = ExecuteOnThreads(*schedule, w, in, options);
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

std::vector<Mask> Masks() {
  return {Mask::Full(), Mask::Causal(), Mask::Window(40), Mask::Documents({30, 5, 97, 60})};  // sums to 192
}

SchemeParams Params(Scheme s, Layout layout) {
  SchemeParams p;
  p.scheme = s;
  p.layout = layout;
  return p;
}

class ExecuteNumerics : public ::testing::TestWithParam<int64_t> {};

TEST_P(ExecuteNumerics, EverySchemeMatchesPlainAttention) {
  const int64_t P = GetParam();
  std::mt19937_64 seeds(1234 + P);
  for (const Mask& mask : Masks()) {
    const Layout balanced = mask.kind == MaskKind::kFull ? Layout::kContiguous : Layout::kZigzag;
    std::vector<Case> cases;
    for (auto [hq, hkv] : {std::pair<int64_t, int64_t>{4, 4}, {8, 2}}) {  // MHA and GQA (g = 4)
      // Ring in every layout the mask allows, with and without the forward cache.
      for (Layout layout : {Layout::kContiguous, Layout::kZigzag, Layout::kStriped}) {
        if (layout == Layout::kStriped && mask.kind != MaskKind::kFull && mask.kind != MaskKind::kCausal) continue;
        SchemeParams p = Params(Scheme::kRing, layout);
        p.ring = P;
        cases.push_back({P, p, mask, hq, hkv, 1});
      }
      SchemeParams ag = Params(Scheme::kAllGatherKV, balanced);
      ag.ring = P;
      ag.cache_forward = true;
      cases.push_back({P, ag, mask, hq, hkv, 2});
      if (hkv % P == 0) {
        SchemeParams u = Params(Scheme::kUlysses, Layout::kContiguous);
        u.ulysses = P;
        cases.push_back({P, u, mask, hq, hkv, 1});
      }
      if (P % 2 == 0 && hkv % 2 == 0) {
        SchemeParams usp = Params(Scheme::kUsp, balanced);
        usp.ulysses = 2;
        usp.ring = P / 2;
        cases.push_back({P, usp, mask, hq, hkv, 1});
        SchemeParams hybrid = Params(Scheme::kMeshUlysses, balanced);
        hybrid.ulysses = 2;
        hybrid.tile_a = (P / 2) % 2 == 0 ? 2 : 1;
        hybrid.tile_b = (P / 2) / hybrid.tile_a;
        hybrid.cache_forward = true;
        cases.push_back({P, hybrid, mask, hq, hkv, 1});
        if (P / 2 >= 4) {
          SchemeParams lt = Params(Scheme::kLoongTrain, balanced);
          lt.ulysses = 2;
          lt.ring = P / 2;
          lt.window = 2;
          cases.push_back({P, lt, mask, hq, hkv, 1});
        }
      }
      // Every tile shape of the 2-D schemes, both reduce chains for Mesh.
      for (int64_t a = 1; a <= P; ++a) {
        if (P % a) continue;
        SchemeParams a2d = Params(Scheme::kAttention2D, balanced);
        a2d.tile_a = a;
        a2d.tile_b = P / a;
        a2d.cache_forward = a % 2 == 0;
        cases.push_back({P, a2d, mask, hq, hkv, 1});
        SchemeParams mesh = Params(Scheme::kMesh, balanced);
        mesh.tile_a = a;
        mesh.tile_b = P / a;
        mesh.reduce_chain = a % 2 == 0 ? ReduceChain::kOwnerFirst : ReduceChain::kOwnerLast;
        mesh.cache_forward = (P / a) % 2 == 0;
        cases.push_back({P, mesh, mask, hq, hkv, 1});
      }
    }
    for (const Case& c : cases) {
      Check(c, seeds());
      if (HasFailure()) return;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, ExecuteNumerics, ::testing::Values(1, 2, 4, 6, 8, 16));

}  // namespace
}  // namespace meshplan::exec
