// Bytes per rank of every strategy's analytic evaluation against the closed forms of
// ALGORITHMS.md / docs/schemes.md, derived here from the workload numbers.
#include <gtest/gtest.h>

#include "planner/context.h"
#include "planner/schemes/registry.h"
#include "planner/strategy.h"
#include "tests/planner/test_cluster.h"

namespace meshplan::planner {
namespace {

// The per-rank sizes written out from first principles (not via ComputeShardBytes).
struct Sizes {
  double Q, KV, Op, dKVp, L;
};
Sizes HandSizes(const Workload& w, int64_t P) {
  const double tokens = double(w.batch) * double(w.seq_len) / double(P);
  const double e = BytesPerElement(w.dtype), ep = BytesPerElement(w.partial_dtype);
  const double X = tokens * double(w.head_dim) * e;  // one head of one rank's shard
  return {double(w.q_heads) * X, 2.0 * double(w.kv_heads) * X, double(w.q_heads) * X * ep / e,
          2.0 * double(w.kv_heads) * X * ep / e, tokens * double(w.q_heads) * 4.0};
}

Workload MakeWorkload(int64_t seq, int64_t hq, int64_t hkv, Pass pass) {
  Workload w;
  w.batch = 1;
  w.seq_len = seq;
  w.q_heads = hq;
  w.kv_heads = hkv;
  w.head_dim = 64;
  w.dtype = DType::kBf16;          // e = 2
  w.partial_dtype = DType::kFp32;  // e_p = 4
  w.mask = Mask::Causal();
  w.pass = pass;
  return w;
}

SchemeParams Params(Scheme s, const std::vector<std::string>& placement = {}) {
  SchemeParams p;
  p.scheme = s;
  p.layout = Layout::kZigzag;
  p.placement = placement;
  return p;
}

// Evaluates and checks fwd, bwd and the total (max over ranks of the traffic) against `expected`.
void ExpectBytes(const Workload& w, const Topology& t, SchemeParams p, double fwd, double bwd) {
  if (p.placement.empty()) p.placement = CanonicalPlacement(planner::RankDims(p));
  const PlanContext ctx(w, t);
  const Estimate e = MakeStrategy(p.scheme)->Evaluate(ctx, p);
  ASSERT_TRUE(e.valid) << e.reason;
  const double want_fwd = HasForward(w.pass) ? fwd : 0.0;
  const double want_bwd = HasBackward(w.pass) ? bwd : 0.0;
  EXPECT_DOUBLE_EQ(e.fwd_bytes_per_rank, want_fwd)
      << SchemeName(p.scheme) << " " << planner::DescribeParams(p);
  EXPECT_DOUBLE_EQ(e.bwd_bytes_per_rank, want_bwd)
      << SchemeName(p.scheme) << " " << planner::DescribeParams(p);
  // Symmetric schemes: every rank sends the same, so the busiest rank's total is the sum.
  EXPECT_NEAR(e.bytes_per_rank, want_fwd + want_bwd, 1e-6 * (want_fwd + want_bwd) + 1e-9);
}

struct Config {
  const char* name;
  int64_t gpus_per_node, nodes, seq, hq, hkv;
};
// MHA on 2 x 4 GPUs; GQA (g = 4) on 2 x 4; six ranks (3 x 2) for non-square tiles.
const Config kConfigs[] = {
    {"mha-8", 4, 2, 4096, 4, 4}, {"gqa-8", 4, 2, 4096, 8, 2}, {"gqa-6", 2, 3, 6144, 4, 2}};

class EvaluateBytes : public ::testing::TestWithParam<std::tuple<Config, Pass>> {
 protected:
  void SetUp() override {
    cfg_ = std::get<0>(GetParam());
    w_ = MakeWorkload(cfg_.seq, cfg_.hq, cfg_.hkv, std::get<1>(GetParam()));
    t_ = testing::SmallCluster(cfg_.gpus_per_node, cfg_.nodes);
    P_ = t_.num_gpus();
    s_ = HandSizes(w_, P_);
  }
  Config cfg_;
  Workload w_;
  Topology t_;
  int64_t P_;
  Sizes s_;
};

TEST_P(EvaluateBytes, Ring) {
  // fwd (P-1)|KV|; bwd (P-1)(|KV| + |dKVp|), cached (P-1)|dKVp|.
  SchemeParams p = Params(Scheme("ring"));
  p.ring = P_;
  ExpectBytes(w_, t_, p, (P_ - 1) * s_.KV, (P_ - 1) * (s_.KV + s_.dKVp));
  p.cache_forward = true;
  ExpectBytes(w_, t_, p, (P_ - 1) * s_.KV, (P_ - 1) * s_.dKVp);
}

TEST_P(EvaluateBytes, AllGatherKV) {
  // All-gather of a |KV| shard over P ranks sends (P-1)|KV|; reduce-scatter (P-1)|dKVp|.
  SchemeParams p = Params(Scheme("allgather-kv"));
  p.ring = P_;
  ExpectBytes(w_, t_, p, (P_ - 1) * s_.KV, (P_ - 1) * (s_.KV + s_.dKVp));
  p.cache_forward = true;
  ExpectBytes(w_, t_, p, (P_ - 1) * s_.KV, (P_ - 1) * s_.dKVp);
}

TEST_P(EvaluateBytes, Usp) {
  // U = 2 (divides Hkv in every config), R = P/2: Ulysses terms with (U-1)/U = 1/2 plus the
  // ring's (R-1)|KV| forward and (R-1)(|KV| + |dKVp|) backward.
  const int64_t U = 2, R = P_ / 2;
  SchemeParams p = Params(Scheme("usp"));
  p.ulysses = U;
  p.ring = R;
  ExpectBytes(w_, t_, p, 0.5 * (2 * s_.Q + s_.KV) + (R - 1) * s_.KV,
              0.5 * (2 * s_.Q + s_.KV + s_.L) + (R - 1) * (s_.KV + s_.dKVp) + 0.5 * (s_.Q + s_.KV));
  p.cache_forward = true;
  p.placement = {"ring", "ulysses"};
  ExpectBytes(w_, t_, p, 0.5 * (2 * s_.Q + s_.KV) + (R - 1) * s_.KV,
              0.5 * s_.Q + (R - 1) * s_.dKVp + 0.5 * (s_.Q + s_.KV));
}

TEST_P(EvaluateBytes, Attention2D) {
  // Every factorisation a x b = P, including non-square ones (2x4, 4x2, 2x3, 3x2):
  // fwd (a-1)|Q| + (b-1)|KV| + (a-1)(|Op| + |L|);
  // bwd (a-1)(2|Q| + 2|L|) + (b-1)|KV| + (a-1)|dQp| + (b-1)|dKVp|; cached drops Q and KV gathers.
  for (int64_t a = 1; a <= P_; ++a) {
    if (P_ % a) continue;
    const int64_t b = P_ / a;
    SchemeParams p = Params(Scheme("attention2d"));
    p.tile_a = a;
    p.tile_b = b;
    const double fwd = (a - 1) * s_.Q + (b - 1) * s_.KV + (a - 1) * (s_.Op + s_.L);
    ExpectBytes(
        w_, t_, p, fwd,
        (a - 1) * (2 * s_.Q + 2 * s_.L) + (b - 1) * s_.KV + (a - 1) * s_.Op + (b - 1) * s_.dKVp);
    p.cache_forward = true;
    ExpectBytes(w_, t_, p, fwd, (a - 1) * (s_.Q + 2 * s_.L) + (a - 1) * s_.Op + (b - 1) * s_.dKVp);
  }
}

TEST_P(EvaluateBytes, Attention2DOverlap) {
  // ATTENTION2D-O moves ATTENTION2D's tensors as ring steps: per rank a-1 Q shifts of |Q| and
  // a-1 chain hops of |Op| + |L| forward; backward a-1 shifts of 2|Q| + 2|L| (|Q| + 2|L| cached),
  // b-1 KV shifts (none cached), a-1 dQ hops of |dQp| and b-1 dK,dV hops of |dKVp|. Both
  // placements, since the bytes must not depend on where the groups sit.
  for (int64_t a = 1; a <= P_; ++a) {
    if (P_ % a) continue;
    const int64_t b = P_ / a;
    for (const std::vector<std::string>& placement :
         {std::vector<std::string>{"q", "kv"}, {"kv", "q"}}) {
      SchemeParams p = Params(Scheme("attention2d-o"), placement);
      p.tile_a = a;
      p.tile_b = b;
      const double fwd = (a - 1) * s_.Q + (b - 1) * s_.KV + (a - 1) * (s_.Op + s_.L);
      ExpectBytes(
          w_, t_, p, fwd,
          (a - 1) * (2 * s_.Q + 2 * s_.L) + (b - 1) * s_.KV + (a - 1) * s_.Op + (b - 1) * s_.dKVp);
      p.cache_forward = true;
      ExpectBytes(w_, t_, p, fwd,
                  (a - 1) * (s_.Q + 2 * s_.L) + (a - 1) * s_.Op + (b - 1) * s_.dKVp);
    }
  }
}

TEST_P(EvaluateBytes, Mesh) {
  // Same terms as ATTENTION2D with owner-last chains; owner-first adds one hop per chain.
  for (int64_t a = 1; a <= P_; ++a) {
    if (P_ % a) continue;
    const int64_t b = P_ / a;
    SchemeParams p = Params(Scheme("mesh"), {"kv", "q"});
    p.tile_a = a;
    p.tile_b = b;
    const double fwd = (a - 1) * s_.Q + (b - 1) * s_.KV + (a - 1) * (s_.Op + s_.L);
    ExpectBytes(
        w_, t_, p, fwd,
        (a - 1) * (2 * s_.Q + 2 * s_.L) + (b - 1) * s_.KV + (a - 1) * s_.Op + (b - 1) * s_.dKVp);
    p.cache_forward = true;
    ExpectBytes(w_, t_, p, fwd, (a - 1) * (s_.Q + 2 * s_.L) + (a - 1) * s_.Op + (b - 1) * s_.dKVp);
    p.cache_forward = false;
    p.reduce_chain = ReduceChain::kOwnerFirst;
    const int64_t ca = a > 1 ? a : 0, cb = b > 1 ? b : 0;
    ExpectBytes(w_, t_, p, (a - 1) * s_.Q + (b - 1) * s_.KV + ca * (s_.Op + s_.L),
                (a - 1) * (2 * s_.Q + 2 * s_.L) + (b - 1) * s_.KV + ca * s_.Op + cb * s_.dKVp);
  }
}

TEST_P(EvaluateBytes, MeshUlysses) {
  // U = 2, mesh over M = P/2 ranks with a = 1 and a = M (non-square 1 x M and M x 1 tiles):
  // Ulysses terms (as USP) plus the mesh terms.
  const int64_t U = 2, M = P_ / 2;
  for (int64_t a : {int64_t{1}, M}) {
    const int64_t b = M / a;
    SchemeParams p = Params(Scheme("mesh-ulysses"));
    p.ulysses = U;
    p.tile_a = a;
    p.tile_b = b;
    ExpectBytes(
        w_, t_, p,
        0.5 * (2 * s_.Q + s_.KV) + (a - 1) * s_.Q + (b - 1) * s_.KV + (a - 1) * (s_.Op + s_.L),
        0.5 * (2 * s_.Q + s_.KV + s_.L) + (a - 1) * (2 * s_.Q + 2 * s_.L) + (b - 1) * s_.KV +
            (a - 1) * s_.Op + (b - 1) * s_.dKVp + 0.5 * (s_.Q + s_.KV));
  }
}

// Ulysses needs U = P dividing Hkv, so it gets its own clusters: MHA on 4 GPUs, GQA (g = 2) on
// 4 GPUs, GQA (g = 4) on 2 GPUs. Forward (P-1)/P (|Q| + |KV| + |O|); backward cached
// (P-1)/P (|dO| + |dQ| + |dKV|); not cached also Q, KV and D (fp32, |L|) go in again.
TEST(EvaluateBytesUlysses, ClosedForms) {
  struct Case {
    int64_t gpus_per_node, nodes, hq, hkv;
  };
  for (const Case& c : {Case{2, 2, 4, 4}, Case{4, 1, 8, 4}, Case{1, 2, 8, 2}}) {
    for (Pass pass : {Pass::kForward, Pass::kBackward, Pass::kForwardBackward}) {
      const Topology t = testing::SmallCluster(c.gpus_per_node, c.nodes);
      const int64_t P = t.num_gpus();
      const Workload w = MakeWorkload(4096, c.hq, c.hkv, pass);
      const Sizes s = HandSizes(w, P);
      const double f = double(P - 1) / double(P);
      SchemeParams p = Params(Scheme("ulysses"));
      p.layout = Layout::kContiguous;
      p.ulysses = P;
      ExpectBytes(w, t, p, f * (s.Q + s.KV + s.Q), f * (s.Q + s.KV + s.Q + s.L) + f * (s.Q + s.KV));
      p.cache_forward = true;
      ExpectBytes(w, t, p, f * (s.Q + s.KV + s.Q), f * s.Q + f * (s.Q + s.KV));
    }
  }
}

// LoongTrain: head parallel hp x double ring cp (windows of w): the same totals as USP, since
// the double ring still makes cp-1 KV hops per rank ((cp/w)(w-1) inner + (cp/w - 1) outer).
TEST(EvaluateBytesLoongTrain, ClosedForms) {
  struct Case {
    int64_t gpus_per_node, nodes, hq, hkv, hp, cp, window;
  };
  for (const Case& c :
       {Case{4, 2, 4, 4, 2, 4, 2}, Case{4, 2, 8, 2, 1, 8, 4}, Case{4, 3, 8, 2, 2, 6, 3}}) {
    for (Pass pass : {Pass::kForward, Pass::kBackward, Pass::kForwardBackward}) {
      const Topology t = testing::SmallCluster(c.gpus_per_node, c.nodes);
      const Workload w = MakeWorkload(6144 * 2, c.hq, c.hkv, pass);
      const Sizes s = HandSizes(w, t.num_gpus());
      const double f = double(c.hp - 1) / double(c.hp);  // Ulysses share (U-1)/U
      SchemeParams p = Params(Scheme("loongtrain"), {"head", "inner", "outer"});
      p.ulysses = c.hp;
      p.ring = c.cp;
      p.window = c.window;
      ExpectBytes(w, t, p, f * (2 * s.Q + s.KV) + (c.cp - 1) * s.KV,
                  f * (2 * s.Q + s.KV + s.L) + (c.cp - 1) * (s.KV + s.dKVp) + f * (s.Q + s.KV));
      p.cache_forward = true;
      ExpectBytes(w, t, p, f * (2 * s.Q + s.KV) + (c.cp - 1) * s.KV,
                  f * s.Q + (c.cp - 1) * s.dKVp + f * (s.Q + s.KV));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllConfigs, EvaluateBytes,
                         ::testing::Combine(::testing::ValuesIn(kConfigs),
                                            ::testing::Values(Pass::kForward, Pass::kBackward,
                                                              Pass::kForwardBackward)),
                         [](const auto& info) {
                           std::string name = std::string(std::get<0>(info.param).name) + "_" +
                                              std::string(PassName(std::get<1>(info.param)));
                           for (char& c : name) {
                             if (c == '-' || c == '+') c = '_';
                           }
                           return name;
                         });

// The documented example: Mesh/ATTENTION2D with MHA and a square tile sends about
// 4(sqrt(P)-1) Hq X forward against Ring's 2(P-1) Hq X (ALGORITHMS.md, "(sqrt(P)+1)/2").
TEST(EvaluateBytesRatio, SquareMeshVersusRingIsHalfOfSqrtPPlusOne) {
  const Topology t = testing::SmallCluster(8, 8);  // P = 64
  Workload w = MakeWorkload(1 << 16, 8, 8, Pass::kForward);
  w.partial_dtype = DType::kBf16;  // |Op| = |Q| as in the closed form; LSE is the small extra
  const PlanContext ctx(w, t);
  SchemeParams ring = Params(Scheme("ring"));
  ring.ring = 64;
  ring.placement = {"cp"};
  SchemeParams mesh = Params(Scheme("mesh"), {"q", "kv"});
  mesh.tile_a = 8;
  mesh.tile_b = 8;
  const double ring_bytes = MakeStrategy(Scheme("ring"))->Evaluate(ctx, ring).fwd_bytes_per_rank;
  const Estimate m = MakeStrategy(Scheme("mesh"))->Evaluate(ctx, mesh);
  const double lse = 7 * double(w.seq_len / 64) * 8 * 4;  // (a-1)|LSE|
  EXPECT_NEAR(ring_bytes / (m.fwd_bytes_per_rank - lse), (8.0 + 1.0) / 2.0, 1e-9);
}

}  // namespace
}  // namespace meshplan::planner
