// Shared by the expansion tests of the non-Mesh schemes (tests/planner/schemes/*_test.cc): a
// small workload on a one-level cluster, the expected bytes per rank of docs/schemes.md derived
// from the workload numbers, and RunCase, which checks a schedule with CheckSchedule and against
// those bytes.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>

#include "planner/schedule_check.h"
#include "planner/schemes/registry.h"
#include "planner/strategy.h"

namespace meshplan::planner::scheme_tests {

// bf16 (e = 2), partials fp32 (e_p = 4).
inline constexpr int64_t kBatch = 2, kSeq = 1920, kDim = 8;

struct Case {
  Scheme scheme = Scheme("ring");
  int64_t p = 1;
  int64_t u = 1, r = 1, w = 1, a = 1, b = 1;  // Ulysses degree, ring/cp, window, tile
  Layout layout = Layout::kZigzag;
  Mask mask = Mask::Causal();
  int64_t hq = 8, hkv = 8;
  Pass pass = Pass::kForwardBackward;
  bool cache = false;
  int64_t seq = kSeq;

  std::string Name() const {
    return std::string(SchemeName(scheme)) + " P=" + std::to_string(p) + " u=" + std::to_string(u) +
           " r=" + std::to_string(r) + " w=" + std::to_string(w) + " a=" + std::to_string(a) +
           " b=" + std::to_string(b) + " " + std::string(LayoutName(layout)) + " " +
           mask.ToString() + " Hq=" + std::to_string(hq) + " Hkv=" + std::to_string(hkv) + " " +
           std::string(PassName(pass)) + (cache ? " cache" : "");
  }
  SchemeParams Params() const {
    SchemeParams sp;
    sp.scheme = scheme;
    sp.layout = layout;
    sp.ulysses = u;
    sp.ring = r;
    sp.window = w;
    sp.tile_a = a;
    sp.tile_b = b;
    sp.cache_forward = cache;
    return sp;
  }
};

// Owns the workload and topology a PlanContext refers to.
struct Env {
  explicit Env(const Case& c) {
    workload.batch = kBatch;
    workload.seq_len = c.seq;
    workload.q_heads = c.hq;
    workload.kv_heads = c.hkv;
    workload.head_dim = kDim;
    workload.dtype = DType::kBf16;
    workload.partial_dtype = DType::kFp32;
    workload.mask = c.mask;
    workload.pass = c.pass;
    NetworkLevel level;
    level.name = "fabric";
    level.group_size = c.p;
    level.bandwidth_bytes_per_s = 1e11;
    topology.name = "test";
    topology.levels = {level};
    ctx = std::make_unique<PlanContext>(workload, topology);
  }
  Workload workload;
  Topology topology;
  std::unique_ptr<PlanContext> ctx;
};

// The schedule of `params` from its scheme's strategy (the registry, as the CLI gets it).
inline Result<Schedule> Expand(const PlanContext& ctx, const SchemeParams& params) {
  const std::unique_ptr<Strategy> strategy = MakeStrategy(params.scheme);
  if (strategy == nullptr) return Status::Internal("no strategy for this scheme");
  return strategy->Expand(ctx, params);
}

// Bytes sent per rank, docs/schemes.md. Sizes (bytes) of one rank's shard of S/P tokens:
//   X = B*(S/P)*d*e, Q = Hq*X, KV = 2*Hkv*X, Op = Hq*B*(S/P)*d*e_p (partial O or dQ),
//   dKVp = 2*Hkv*B*(S/P)*d*e_p, L = B*(S/P)*Hq*4 (LSE or D, fp32).
// Collectives over g ranks: all-gather / reduce-scatter of a shard x send (g-1)*x, all-to-all
// of x bytes per rank sends (g-1)/g*x. A ring pass over g ranks moves g-1 hops of its tensor.
inline double ExpectedBytes(const Case& c) {
  const double tokens = static_cast<double>(kBatch * c.seq / c.p);
  const double x = tokens * kDim * 2;
  const double q = c.hq * x, kv = 2.0 * c.hkv * x;
  const double op = c.hq * tokens * kDim * 4, dkvp = 2.0 * c.hkv * tokens * kDim * 4;
  const double l = tokens * c.hq * 4;
  const bool fwd = HasForward(c.pass), bwd = HasBackward(c.pass);
  double total = 0;
  // Ulysses all-to-all terms (fraction f = (U-1)/U): forward Q, KV in and O out; backward
  // with cache dO in, dQ + dK + dV out; without cache Q, KV, dO, D in as well.
  auto ulysses = [&](int64_t u) {
    const double f = static_cast<double>(u - 1) / static_cast<double>(u);
    double t = 0;
    if (fwd) t += f * (q + kv + q);
    if (bwd) t += c.cache ? f * q + f * (q + kv) : f * (q + kv + q + l) + f * (q + kv);
    return t;
  };
  // A KV ring of g ranks: g-1 KV hops per pass that moves KV (the backward only without cache),
  // plus g-1 hops of the owner-last dK+dV chain in the backward.
  auto ring = [&](int64_t g) {
    double t = 0;
    if (fwd) t += (g - 1) * kv;
    if (bwd) t += (c.cache ? 0 : (g - 1) * kv) + (g - 1) * dkvp;
    return t;
  };
  const std::string_view name = c.scheme.name();
  if (name == "ring" || name == "allgather-kv") {
    // AG (P-1)*KV (again in bwd unless cached) + RS (P-1)*dKVp
    total = ring(c.p);
  } else if (name == "ulysses") {
    total = ulysses(c.u);
  } else if (name == "usp" || name == "loongtrain") {
    // the double ring moves the same cp-1 hops as a plain ring
    total = ulysses(c.u) + ring(c.r);
  } else if (name == "attention2d" || name == "attention2d-o") {
    // fwd: AG Q over a, AG KV over b, RS O+LSE over a. ATTENTION2D-O moves the same tensors
    // as ring steps: a-1 Q shifts and a-1 O+LSE chain hops over a, b-1 KV shifts over b.
    // bwd: AG Q+dO+LSE+D over a (dO+LSE+D with cache), AG KV over b (not with cache),
    //      RS dQ over a, RS dK+dV over b (ATTENTION2D-O: a-1 shifts of Q+dO+LSE+D, a-1 dQ hops,
    //      b-1 KV shifts, b-1 dK+dV hops).
    if (fwd) total += (c.a - 1) * q + (c.b - 1) * kv + (c.a - 1) * (op + l);
    if (bwd) {
      total += c.cache ? (c.a - 1) * (q + 2 * l) : (c.a - 1) * (q + q + 2 * l) + (c.b - 1) * kv;
      total += (c.a - 1) * op + (c.b - 1) * dkvp;
    }
  }
  return total;
}

inline void RunCase(const Case& c) {
  SCOPED_TRACE(c.Name());
  Env env(c);
  Result<Schedule> s = Expand(*env.ctx, c.Params());
  ASSERT_TRUE(s.ok()) << s.status().message();
  const Status st = CheckSchedule(*s, *env.ctx);
  ASSERT_TRUE(st.ok()) << st.message();
  const ScheduleSummary sum = Summarize(*s);
  const double want = ExpectedBytes(c);
  for (int64_t r = 0; r < c.p; ++r) {
    EXPECT_EQ(sum.bytes_sent[r], want) << "rank " << r;
    EXPECT_EQ(sum.bytes_received[r], want) << "rank " << r;
  }
  // Zigzag balances causal work: exactly in the 1-D schemes (every rank's Q shard, chunks r and
  // 2N-1-r, meets every KV shard, and the two chunks' causal pairs sum to the same count for
  // every r), to within 1% in ATTENTION2D's tiles.
  if (c.layout == Layout::kZigzag && c.mask.kind == MaskKind::kCausal) {
    const bool tile = c.scheme == Scheme("attention2d") || c.scheme == Scheme("attention2d-o");
    const double bound = tile ? 1.01 : 1.0 + 1e-12;
    if (HasForward(c.pass)) {
      EXPECT_LT(Imbalance(sum.flops_forward), bound);
    }
    if (HasBackward(c.pass)) {
      EXPECT_LT(Imbalance(sum.flops_backward), bound);
    }
  }
}

// Runs `base` for every pass, with and without cache.
inline void RunAllPasses(Case base) {
  for (Pass pass : {Pass::kForward, Pass::kBackward, Pass::kForwardBackward}) {
    for (bool cache : {false, true}) {
      base.pass = pass;
      base.cache = cache;
      RunCase(base);
    }
  }
}

inline Mask UnevenDocs() { return Mask::Documents({700, 100, 900, 220}); }  // sums to S = 1920

inline Case Make(Scheme scheme, int64_t p, Layout layout, Mask mask, int64_t hq, int64_t hkv) {
  Case c;
  c.scheme = scheme;
  c.p = p;
  c.r = p;
  c.layout = layout;
  c.mask = std::move(mask);
  c.hq = hq;
  c.hkv = hkv;
  return c;
}

inline Case Ulysses(int64_t u, Mask mask, int64_t hq, int64_t hkv) {
  Case c = Make(Scheme("ulysses"), u, Layout::kContiguous, std::move(mask), hq, hkv);
  c.u = u;
  c.r = 1;
  return c;
}

inline Case Usp(int64_t u, int64_t r, Layout layout, Mask mask, int64_t hq, int64_t hkv) {
  Case c = Make(Scheme("usp"), u * r, layout, std::move(mask), hq, hkv);
  c.u = u;
  c.r = r;
  return c;
}

inline Case Loong(int64_t hp, int64_t cp, int64_t w, Layout layout, Mask mask, int64_t hq,
                  int64_t hkv) {
  Case c = Make(Scheme("loongtrain"), hp * cp, layout, std::move(mask), hq, hkv);
  c.u = hp;
  c.r = cp;
  c.w = w;
  return c;
}

inline Case Tile(int64_t a, int64_t b, Layout layout, Mask mask, int64_t hq, int64_t hkv) {
  Case c = Make(Scheme("attention2d"), a * b, layout, std::move(mask), hq, hkv);
  c.a = a;
  c.b = b;
  return c;
}

inline Case TileOverlap(int64_t a, int64_t b, Layout layout, Mask mask, int64_t hq, int64_t hkv) {
  Case c = Tile(a, b, layout, std::move(mask), hq, hkv);
  c.scheme = Scheme("attention2d-o");
  return c;
}

// Expanding c fails with kInvalidInput.
inline void ExpectInvalid(const Case& c) {
  Env env(c);
  auto s = Expand(*env.ctx, c.Params());
  EXPECT_FALSE(s.ok()) << c.Name();
  if (!s.ok()) {
    EXPECT_EQ(s.status().code(), ErrorCode::kInvalidInput);
  }
}

}  // namespace meshplan::planner::scheme_tests
