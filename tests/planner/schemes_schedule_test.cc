// Schedule expansions of the non-Mesh schemes: every schedule passes CheckSchedule, and every
// rank sends (and receives) exactly the bytes of docs/schemes.md, derived here from the
// workload numbers.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "planner/schedule_check.h"
#include "planner/schedules/expand.h"

namespace meshplan::planner {
namespace {

constexpr int64_t kBatch = 2, kSeq = 1920, kDim = 8;  // bf16 (e = 2), partials fp32 (e_p = 4)

struct Case {
  Scheme scheme = Scheme::kRing;
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

Result<Schedule> Expand(const PlanContext& ctx, const SchemeParams& params) {
  switch (params.scheme) {
    case Scheme::kRing:
      return ExpandRing(ctx, params);
    case Scheme::kAllGatherKV:
      return ExpandAllGatherKV(ctx, params);
    case Scheme::kUlysses:
      return ExpandUlysses(ctx, params);
    case Scheme::kUsp:
      return ExpandUsp(ctx, params);
    case Scheme::kLoongTrain:
      return ExpandLoongTrain(ctx, params);
    case Scheme::kAttention2D:
      return ExpandAttention2D(ctx, params);
    default:
      return Status::Internal("not a scheme of this test");
  }
}

// Bytes sent per rank, docs/schemes.md. Sizes (bytes) of one rank's shard of S/P tokens:
//   X = B*(S/P)*d*e, Q = Hq*X, KV = 2*Hkv*X, Op = Hq*B*(S/P)*d*e_p (partial O or dQ),
//   dKVp = 2*Hkv*B*(S/P)*d*e_p, L = B*(S/P)*Hq*4 (LSE or D, fp32).
// Collectives over g ranks: all-gather / reduce-scatter of a shard x send (g-1)*x, all-to-all
// of x bytes per rank sends (g-1)/g*x. A ring pass over g ranks moves g-1 hops of its tensor.
double ExpectedBytes(const Case& c) {
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
  switch (c.scheme) {
    case Scheme::kRing:
    case Scheme::kAllGatherKV:  // AG (P-1)*KV (again in bwd unless cached) + RS (P-1)*dKVp
      total = ring(c.p);
      break;
    case Scheme::kUlysses:
      total = ulysses(c.u);
      break;
    case Scheme::kUsp:
    case Scheme::kLoongTrain:  // the double ring moves the same cp-1 hops as a plain ring
      total = ulysses(c.u) + ring(c.r);
      break;
    case Scheme::kAttention2D:
      // fwd: AG Q over a, AG KV over b, RS O+LSE over a.
      // bwd: AG Q+dO+LSE+D over a (dO+LSE+D with cache), AG KV over b (not with cache),
      //      RS dQ over a, RS dK+dV over b.
      if (fwd) total += (c.a - 1) * q + (c.b - 1) * kv + (c.a - 1) * (op + l);
      if (bwd) {
        total += c.cache ? (c.a - 1) * (q + 2 * l) : (c.a - 1) * (q + q + 2 * l) + (c.b - 1) * kv;
        total += (c.a - 1) * op + (c.b - 1) * dkvp;
      }
      break;
    default:
      break;
  }
  return total;
}

void RunCase(const Case& c) {
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
    const double bound = c.scheme == Scheme::kAttention2D ? 1.01 : 1.0 + 1e-12;
    if (HasForward(c.pass)) {
      EXPECT_LT(Imbalance(sum.flops_forward), bound);
    }
    if (HasBackward(c.pass)) {
      EXPECT_LT(Imbalance(sum.flops_backward), bound);
    }
  }
}

// Runs `base` for every pass, with and without cache.
void RunAllPasses(Case base) {
  for (Pass pass : {Pass::kForward, Pass::kBackward, Pass::kForwardBackward}) {
    for (bool cache : {false, true}) {
      base.pass = pass;
      base.cache = cache;
      RunCase(base);
    }
  }
}

Mask UnevenDocs() { return Mask::Documents({700, 100, 900, 220}); }  // sums to S = 1920

Case Make(Scheme scheme, int64_t p, Layout layout, Mask mask, int64_t hq, int64_t hkv) {
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

TEST(SchemeScheduleTest, Ring) {
  RunAllPasses(Make(Scheme::kRing, 1, Layout::kZigzag, Mask::Causal(), 8, 8));
  RunAllPasses(Make(Scheme::kRing, 2, Layout::kContiguous, Mask::Full(), 8, 8));
  RunAllPasses(Make(Scheme::kRing, 4, Layout::kZigzag, Mask::Causal(), 8, 2));  // GQA
  RunAllPasses(Make(Scheme::kRing, 6, Layout::kContiguous, Mask::Window(300), 4, 4));
  RunAllPasses(Make(Scheme::kRing, 8, Layout::kZigzag, UnevenDocs(), 8, 4));
  RunAllPasses(Make(Scheme::kRing, 4, Layout::kStriped, Mask::Causal(), 8, 8));
}

TEST(SchemeScheduleTest, AllGatherKV) {
  RunAllPasses(Make(Scheme::kAllGatherKV, 1, Layout::kZigzag, Mask::Causal(), 8, 8));
  RunAllPasses(Make(Scheme::kAllGatherKV, 4, Layout::kZigzag, Mask::Causal(), 8, 2));
  RunAllPasses(Make(Scheme::kAllGatherKV, 6, Layout::kContiguous, UnevenDocs(), 8, 8));
  RunAllPasses(Make(Scheme::kAllGatherKV, 8, Layout::kStriped, Mask::Full(), 4, 4));
  RunAllPasses(Make(Scheme::kAllGatherKV, 2, Layout::kZigzag, Mask::Window(200), 8, 8));
}

Case Ulysses(int64_t u, Mask mask, int64_t hq, int64_t hkv) {
  Case c = Make(Scheme::kUlysses, u, Layout::kContiguous, std::move(mask), hq, hkv);
  c.u = u;
  c.r = 1;
  return c;
}

TEST(SchemeScheduleTest, Ulysses) {
  RunAllPasses(Ulysses(1, Mask::Causal(), 8, 8));
  RunAllPasses(Ulysses(2, Mask::Causal(), 8, 2));  // GQA
  RunAllPasses(Ulysses(4, Mask::Full(), 8, 4));
  RunAllPasses(Ulysses(8, UnevenDocs(), 8, 8));
  RunAllPasses(Ulysses(6, Mask::Window(300), 12, 6));
}

Case Usp(int64_t u, int64_t r, Layout layout, Mask mask, int64_t hq, int64_t hkv) {
  Case c = Make(Scheme::kUsp, u * r, layout, std::move(mask), hq, hkv);
  c.u = u;
  c.r = r;
  return c;
}

TEST(SchemeScheduleTest, Usp) {
  RunAllPasses(Usp(2, 3, Layout::kZigzag, Mask::Causal(), 8, 2));  // non-square, GQA
  RunAllPasses(Usp(3, 2, Layout::kZigzag, Mask::Causal(), 6, 3));
  RunAllPasses(Usp(2, 2, Layout::kContiguous, UnevenDocs(), 8, 8));
  RunAllPasses(Usp(1, 4, Layout::kZigzag, Mask::Causal(), 8, 8));  // pure ring
  RunAllPasses(Usp(4, 1, Layout::kZigzag, Mask::Full(), 8, 4));    // pure Ulysses
  RunAllPasses(Usp(2, 4, Layout::kContiguous, Mask::Window(250), 8, 2));
}

Case Loong(int64_t hp, int64_t cp, int64_t w, Layout layout, Mask mask, int64_t hq, int64_t hkv) {
  Case c = Make(Scheme::kLoongTrain, hp * cp, layout, std::move(mask), hq, hkv);
  c.u = hp;
  c.r = cp;
  c.w = w;
  return c;
}

TEST(SchemeScheduleTest, LoongTrain) {
  RunAllPasses(Loong(2, 4, 2, Layout::kZigzag, Mask::Causal(), 8, 2));  // GQA, 2 windows of 2
  RunAllPasses(Loong(1, 8, 2, Layout::kZigzag, UnevenDocs(), 8, 8));    // 4 windows
  RunAllPasses(Loong(1, 6, 3, Layout::kContiguous, Mask::Full(), 4, 4));
  RunAllPasses(Loong(2, 2, 1, Layout::kZigzag, Mask::Causal(), 8, 8));     // outer ring only
  RunAllPasses(Loong(1, 4, 4, Layout::kZigzag, Mask::Window(300), 8, 8));  // one window
  RunAllPasses(Loong(1, 1, 1, Layout::kZigzag, Mask::Causal(), 8, 8));
}

Case Tile(int64_t a, int64_t b, Layout layout, Mask mask, int64_t hq, int64_t hkv) {
  Case c = Make(Scheme::kAttention2D, a * b, layout, std::move(mask), hq, hkv);
  c.a = a;
  c.b = b;
  return c;
}

TEST(SchemeScheduleTest, Attention2D) {
  RunAllPasses(Tile(2, 4, Layout::kZigzag, Mask::Causal(), 8, 2));  // GQA, non-square
  RunAllPasses(Tile(4, 2, Layout::kZigzag, Mask::Causal(), 8, 2));
  RunAllPasses(Tile(2, 3, Layout::kContiguous, UnevenDocs(), 8, 8));
  RunAllPasses(Tile(3, 2, Layout::kContiguous, Mask::Window(300), 8, 8));
  RunAllPasses(Tile(1, 4, Layout::kZigzag, Mask::Full(), 8, 8));
  RunAllPasses(Tile(4, 1, Layout::kZigzag, Mask::Causal(), 8, 8));
  RunAllPasses(Tile(1, 1, Layout::kZigzag, Mask::Causal(), 8, 8));
  RunAllPasses(Tile(2, 2, Layout::kStriped, Mask::Causal(), 8, 8));
}

// One case by hand: ring, P = 4, B = 2, S = 1920, d = 8, Hkv = 2, bf16, fp32 partials.
// S/P = 480 tokens; X = 2*480*8*2 = 15360 bytes; KV = 2*2*X = 61440; forward 3*KV = 184320.
// dKVp = 2*2*2*480*8*4 = 122880; backward without cache 3*(61440 + 122880) = 552960.
TEST(SchemeScheduleTest, RingBytesByHand) {
  Case c = Make(Scheme::kRing, 4, Layout::kZigzag, Mask::Causal(), 8, 2);
  c.pass = Pass::kForwardBackward;
  Env env(c);
  auto s = ExpandRing(*env.ctx, c.Params());
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(Summarize(*s).bytes_sent[3], 184320.0 + 552960.0);
}

// Rank r holds KV shard (r + s) mod P at step s, and receives it from r + 1.
TEST(SchemeScheduleTest, RingStepStructure) {
  Case c = Make(Scheme::kRing, 4, Layout::kContiguous, Mask::Full(), 8, 8);
  c.pass = Pass::kForward;
  Env env(c);
  auto s = ExpandRing(*env.ctx, c.Params());
  ASSERT_TRUE(s.ok());
  for (int r = 0; r < 4; ++r) {
    int step = 0;
    for (const Op& op : s->ranks[r].ops) {
      if (op.kind == OpKind::kCompute) {
        EXPECT_EQ(op.step, step);
        EXPECT_EQ(op.kv_shard, (r + step) % 4);
        EXPECT_EQ(op.q_shard, r);
        ++step;
      } else if (op.kind == OpKind::kRecv) {
        EXPECT_EQ(op.peer, (r + 1) % 4);
      } else if (op.kind == OpKind::kSend) {
        EXPECT_EQ(op.peer, (r + 3) % 4);
      }
    }
    EXPECT_EQ(step, 4);
  }
}

// Every rank computes exactly the blocks that the Mesh assignment AM[i][j] = a*floor(i/a) +
// (j mod a) gives it: a*b blocks with a full mask.
TEST(SchemeScheduleTest, Attention2DAssignment) {
  for (auto [a, b] : {std::pair<int64_t, int64_t>{2, 4}, {4, 2}, {3, 2}}) {
    Case c = Tile(a, b, Layout::kContiguous, Mask::Full(), 8, 8);
    c.pass = Pass::kForward;
    Env env(c);
    auto s = ExpandAttention2D(*env.ctx, c.Params());
    ASSERT_TRUE(s.ok());
    for (int64_t g = 0; g < a * b; ++g) {
      int computes = 0;
      for (const Op& op : s->ranks[g].ops) {
        if (op.kind != OpKind::kCompute) continue;
        ++computes;
        EXPECT_EQ(a * (op.q_shard / a) + op.kv_shard % a, g);
      }
      EXPECT_EQ(computes, a * b);
    }
  }
}

// USP: rank g = u + U*rho computes heads [u*Hq/U, (u+1)*Hq/U) of Q shard rho.
TEST(SchemeScheduleTest, UspHeads) {
  Case c = Usp(2, 3, Layout::kZigzag, Mask::Causal(), 8, 2);
  c.pass = Pass::kForward;
  Env env(c);
  auto s = ExpandUsp(*env.ctx, c.Params());
  ASSERT_TRUE(s.ok());
  for (int64_t g = 0; g < 6; ++g) {
    for (const Op& op : s->ranks[g].ops) {
      if (op.kind != OpKind::kCompute) continue;
      EXPECT_EQ(op.head_begin, (g % 2) * 4);
      EXPECT_EQ(op.head_count, 4);
      EXPECT_EQ(op.q_shard, g / 2);
    }
  }
}

// LoongTrain: of the cp-1 KV hops and cp-1 dK+dV hops of a ring pass, exactly W-1 = cp/w - 1
// cross windows. Rank g has ring rank rho = g / hp and window rho / w.
TEST(SchemeScheduleTest, LoongTrainCrossWindowHops) {
  for (auto [hp, cp, w] :
       {std::tuple<int64_t, int64_t, int64_t>{2, 4, 2}, {1, 8, 2}, {1, 6, 3}, {1, 4, 1}}) {
    Case c = Loong(hp, cp, w, Layout::kZigzag, Mask::Causal(), 8, 8);
    c.pass = Pass::kBackward;  // no cache: KV hops and dKV hops
    Env env(c);
    auto s = ExpandLoongTrain(*env.ctx, c.Params());
    ASSERT_TRUE(s.ok()) << s.status().message();
    auto window = [&](int64_t g) { return (g / hp) / w; };
    for (int64_t g = 0; g < hp * cp; ++g) {
      int kv_cross = 0, kv_inner = 0, dkv_cross = 0, dkv_inner = 0;
      for (const Op& op : s->ranks[g].ops) {
        if (op.kind != OpKind::kSend) continue;
        const bool cross = window(op.peer) != window(g);
        if (op.tensors == kTensorKV) (cross ? kv_cross : kv_inner)++;
        if (op.tensors == kTensorDKV) (cross ? dkv_cross : dkv_inner)++;
      }
      const int64_t nw = cp / w;
      EXPECT_EQ(kv_cross, nw - 1) << "rank " << g;
      EXPECT_EQ(kv_inner, cp - nw) << "rank " << g;
      EXPECT_EQ(dkv_cross, nw - 1) << "rank " << g;
      EXPECT_EQ(dkv_inner, cp - nw) << "rank " << g;
    }
  }
}

TEST(SchemeScheduleTest, InvalidSizesAreErrors) {
  auto invalid = [](const Case& c) {
    Env env(c);
    auto s = Expand(*env.ctx, c.Params());
    EXPECT_FALSE(s.ok()) << c.Name();
    if (!s.ok()) {
      EXPECT_EQ(s.status().code(), ErrorCode::kInvalidInput);
    }
  };
  Case ring = Make(Scheme::kRing, 4, Layout::kZigzag, Mask::Causal(), 8, 8);
  ring.seq = 1924;  // 8 zigzag chunks do not divide 1924
  ring.mask = Mask::Causal();
  invalid(ring);
  Case wrong_grid = Make(Scheme::kRing, 4, Layout::kZigzag, Mask::Causal(), 8, 8);
  wrong_grid.r = 2;  // ring degree 2 on 4 GPUs
  invalid(wrong_grid);
  invalid(Ulysses(4, Mask::Causal(), 8, 2));                       // U = 4 does not divide Hkv = 2
  invalid(Loong(1, 6, 4, Layout::kZigzag, Mask::Causal(), 8, 8));  // w = 4 does not divide cp = 6
  Case tile = Tile(2, 2, Layout::kZigzag, Mask::Causal(), 8, 8);
  tile.p = 8;  // 2 x 2 tile on 8 GPUs
  invalid(tile);
  invalid(
      Make(Scheme::kAllGatherKV, 4, Layout::kStriped, Mask::Window(10), 8, 8));  // striped + window
}

// The checker handles a 1024-rank schedule with ~2M ops quickly (ATTENTION2D 32 x 32 computes
// 1024 blocks per rank per pass).
TEST(SchemeScheduleTest, CheckerScalesTo1024Ranks) {
  Case c = Tile(32, 32, Layout::kZigzag, Mask::Causal(), 32, 8);
  c.seq = int64_t{1} << 20;
  c.pass = Pass::kForwardBackward;
  Env env(c);
  auto s = ExpandAttention2D(*env.ctx, c.Params());
  ASSERT_TRUE(s.ok());
  EXPECT_GT(s->TotalOps(), 2'000'000);
  const auto start = std::chrono::steady_clock::now();
  const Status st = CheckSchedule(*s, *env.ctx);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(st.ok()) << st.message();
  EXPECT_LT(seconds, 30.0);  // generous bound for slow CI machines; ~1 s expected
  RecordProperty("check_seconds", std::to_string(seconds));
}

}  // namespace
}  // namespace meshplan::planner
