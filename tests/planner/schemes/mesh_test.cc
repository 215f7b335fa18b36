// Mesh-Attention and Mesh-Ulysses schedule expansion (planner/schemes/mesh_tile.cc, through the
// mesh and mesh-ulysses strategies): bytes against docs/schemes.md's closed forms, send/recv
// pairing, exactly-once block coverage, dependencies, zigzag balance.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "core/cluster/topology.h"
#include "core/plan/schedule.h"
#include "planner/context.h"
#include "planner/schemes/registry.h"
#include "planner/strategy.h"
#include "tests/planner/test_cluster.h"

namespace meshplan::planner {
namespace {

// The schedule of `params` from its scheme's strategy (mesh or mesh-ulysses).
Result<Schedule> Expand(const PlanContext& ctx, const SchemeParams& params) {
  return MakeStrategy(params.scheme)->Expand(ctx, params);
}

Topology FlatTopology(int64_t gpus) {
  Topology t;
  t.name = "flat";
  t.gpu.model = "test";
  t.gpu.peak_tflops[DType::kBf16] = 1000;
  t.gpu.memory_bytes = 80e9;
  t.gpu.attention_efficiency = {{1024, 0.5}};
  NetworkLevel l;
  l.name = "switch";
  l.group_size = gpus;
  l.bandwidth_bytes_per_s = 100e9;
  t.levels.push_back(l);
  return t;
}

struct MeshCase {
  std::string name;
  int64_t U = 1;  // 1: mesh; > 1: mesh-ulysses
  int64_t a = 2, b = 2;
  int64_t hq = 8, hkv = 2, d = 16, seq = 0;
  Mask mask = Mask::Causal();
  Layout layout = Layout::kZigzag;
  bool cache = false;
  ReduceChain chain = ReduceChain::kOwnerLast;
  Pass pass = Pass::kForwardBackward;
};

// Closed form of docs/schemes.md, bytes sent per rank, from the workload alone.
// X = B*(S/P)*d*e with e = 2 (bf16); Q = Hq*X; KV = 2*Hkv*X; Op = Q*4/2 (fp32 partials);
// dKVp = KV*4/2; L = B*(S/P)*Hq*4.
//   mesh fwd:            (a-1)*Q + (b-1)*KV + ca*(Op + L)
//   mesh bwd, no cache:  (a-1)*(2Q + 2L) + (b-1)*KV + ca*Op + cb*dKVp
//   mesh bwd, cache:     (a-1)*(Q + 2L) + ca*Op + cb*dKVp
//   ca = a-1, cb = b-1 (owner-last); ca = a (0 if a = 1), cb = b (0 if b = 1) (owner-first).
//   ulysses fwd:         (U-1)/U*(Q + KV + Q)
//   ulysses bwd no cache (U-1)/U*(Q + KV + Q + L) + (U-1)/U*(Q + KV)
//   ulysses bwd cache:   (U-1)/U*Q + (U-1)/U*(Q + KV)
// The shard bytes after the all-to-all are unchanged (S/M tokens x Hq/U heads), so the mesh terms
// use the same Q, KV, L.
double ClosedFormBytes(const MeshCase& c, int64_t P) {
  const double tokens = static_cast<double>(c.seq) / static_cast<double>(P);  // B = 1
  const double X = tokens * static_cast<double>(c.d) * 2;
  const double Q = static_cast<double>(c.hq) * X, KV = 2.0 * static_cast<double>(c.hkv) * X;
  const double Op = Q * 2, dKVp = KV * 2, L = tokens * static_cast<double>(c.hq) * 4;
  const bool first = c.chain == ReduceChain::kOwnerFirst;
  const double ca = c.a == 1 ? 0 : static_cast<double>(first ? c.a : c.a - 1);
  const double cb = c.b == 1 ? 0 : static_cast<double>(first ? c.b : c.b - 1);
  const double a1 = static_cast<double>(c.a - 1), b1 = static_cast<double>(c.b - 1);
  const double uf = static_cast<double>(c.U - 1) / static_cast<double>(c.U);
  double total = 0;
  if (HasForward(c.pass)) total += a1 * Q + b1 * KV + ca * (Op + L) + uf * (Q + KV + Q);
  if (HasBackward(c.pass)) {
    if (c.cache) {
      total += a1 * (Q + 2 * L) + ca * Op + cb * dKVp + uf * Q + uf * (Q + KV);
    } else {
      total += a1 * (2 * Q + 2 * L) + b1 * KV + ca * Op + cb * dKVp + uf * (Q + KV + Q + L) +
               uf * (Q + KV);
    }
  }
  return total;
}

struct Built {
  Workload w;
  Topology topo;
  SchemeParams params;
  Result<Schedule> sched = Status::Internal("unset");
};

void Build(const MeshCase& c, Built& out) {
  const int64_t P = c.U * c.a * c.b;
  out.w.batch = 1;
  out.w.seq_len = c.seq;
  out.w.q_heads = c.hq;
  out.w.kv_heads = c.hkv;
  out.w.head_dim = c.d;
  out.w.mask = c.mask;
  out.w.pass = c.pass;
  out.topo = FlatTopology(P);
  out.params.scheme = c.U > 1 ? Scheme("mesh-ulysses") : Scheme("mesh");
  out.params.layout = c.layout;
  out.params.ulysses = c.U;
  out.params.tile_a = c.a;
  out.params.tile_b = c.b;
  out.params.cache_forward = c.cache;
  out.params.reduce_chain = c.chain;
  out.params.placement = CanonicalPlacement(planner::RankDims(out.params));
  const PlanContext ctx(out.w, out.topo);
  out.sched = Expand(ctx, out.params);
}

// Home shard of canonical rank r: mesh rank r / U (rank u + U*m holds sub-shard u of shard m).
void CheckSchedule(const MeshCase& c) {
  SCOPED_TRACE(c.name);
  Built built;
  Build(c, built);
  ASSERT_TRUE(built.sched.ok()) << built.sched.status().message();
  const Schedule& s = *built.sched;
  const int64_t P = c.U * c.a * c.b, M = c.a * c.b;
  ASSERT_EQ(s.num_ranks, P);
  ASSERT_EQ(static_cast<int64_t>(s.ranks.size()), P);
  EXPECT_EQ(s.layout.num_shards, M);
  EXPECT_EQ(s.layout.subdivide, c.U);

  // 1. Bytes sent per rank (p2p sends and collectives) equal the closed form.
  const double want = ClosedFormBytes(c, P);
  for (int64_t r = 0; r < P; ++r) {
    double sent = 0;
    for (const Op& op : s.ranks[r].ops) {
      if (op.kind == OpKind::kSend || op.kind == OpKind::kAllToAll)
        sent += static_cast<double>(op.bytes);
    }
    EXPECT_NEAR(sent, want, 0.5 + 1e-9 * want) << "rank " << r;
  }

  // 2. Sends pair with receives in program order, with equal tag, tensors, bytes and shards.
  std::map<std::pair<int64_t, int64_t>, std::vector<const Op*>> sends, recvs;
  for (int64_t r = 0; r < P; ++r) {
    for (const Op& op : s.ranks[r].ops) {
      if (op.kind == OpKind::kSend) {
        ASSERT_NE(op.peer, r);
        sends[{r, op.peer}].push_back(&op);
      } else if (op.kind == OpKind::kRecv) {
        recvs[{op.peer, r}].push_back(&op);
      }
    }
  }
  ASSERT_EQ(sends.size(), recvs.size());
  for (const auto& [pair, list] : sends) {
    const auto it = recvs.find(pair);
    ASSERT_NE(it, recvs.end());
    ASSERT_EQ(list.size(), it->second.size()) << pair.first << "->" << pair.second;
    for (size_t i = 0; i < list.size(); ++i) {
      const Op& x = *list[i];
      const Op& y = *it->second[i];
      EXPECT_EQ(x.tag, y.tag);
      EXPECT_EQ(x.tensors, y.tensors);
      EXPECT_EQ(x.bytes, y.bytes);
      EXPECT_EQ(x.q_shard, y.q_shard);
      EXPECT_EQ(x.kv_shard, y.kv_shard);
      EXPECT_EQ(x.phase, y.phase);
    }
  }

  // 3. Every unmasked (q shard, kv shard, head) is computed exactly once per phase; masked-out
  //    blocks are not computed. Pairs from an independent count over the shard token ranges.
  const PairCounter counter(c.mask, c.seq);
  const ShardLayout& lay = s.layout;
  std::vector<Phase> phases;
  if (HasForward(c.pass)) phases.push_back(Phase::kForward);
  if (HasBackward(c.pass)) phases.push_back(Phase::kBackward);
  for (Phase ph : phases) {
    std::vector<int> head_count(static_cast<size_t>(M * M * c.hq), 0);
    for (int64_t r = 0; r < P; ++r) {
      for (const Op& op : s.ranks[r].ops) {
        if (op.kind != OpKind::kCompute || op.phase != ph) continue;
        for (int h = op.head_begin; h < op.head_begin + op.head_count; ++h) {
          ++head_count[(static_cast<size_t>(op.q_shard) * M + op.kv_shard) * c.hq + h];
        }
        // FLOPs: 4*B*pairs*heads*d, times 2.5 in the backward.
        int64_t pairs = 0;
        for (const TokenRange& q : lay.Ranges(op.q_shard)) {
          for (const TokenRange& k : lay.Ranges(op.kv_shard))
            pairs += counter.Count(q.begin, q.end, k.begin, k.end);
        }
        const double f = 4.0 * pairs * op.head_count * c.d * (ph == Phase::kBackward ? 2.5 : 1.0);
        EXPECT_DOUBLE_EQ(op.flops, f);
      }
    }
    for (int64_t i = 0; i < M; ++i) {
      for (int64_t j = 0; j < M; ++j) {
        int64_t pairs = 0;
        for (const TokenRange& q : lay.Ranges(i)) {
          for (const TokenRange& k : lay.Ranges(j))
            pairs += counter.Count(q.begin, q.end, k.begin, k.end);
        }
        for (int64_t h = 0; h < c.hq; ++h) {
          EXPECT_EQ(head_count[(static_cast<size_t>(i) * M + j) * c.hq + h], pairs > 0 ? 1 : 0)
              << "block " << i << "," << j << " head " << h;
        }
      }
    }
  }

  // 4. Dependencies: earlier ops only; a compute on a non-home slot waits for a Recv that carried
  //    that shard; a partial send waits for every compute of its line in its phase; a Merge
  //    waits for the Recv just before it.
  for (int64_t r = 0; r < P; ++r) {
    const RankProgram& prog = s.ranks[r];
    const int64_t home = r / c.U;
    for (size_t i = 0; i < prog.ops.size(); ++i) {
      const Op& op = prog.ops[i];
      ASSERT_LE(op.dep_begin + op.dep_count, prog.deps.size());
      auto has_dep = [&](auto pred) {
        for (uint32_t d = op.dep_begin; d < op.dep_begin + op.dep_count; ++d) {
          if (pred(prog.ops[prog.deps[d]])) return true;
        }
        return false;
      };
      for (uint32_t d = op.dep_begin; d < op.dep_begin + op.dep_count; ++d)
        ASSERT_LT(prog.deps[d], i);
      if (op.kind == OpKind::kCompute) {
        if (op.q_shard != home) {
          EXPECT_TRUE(has_dep(
              [&](const Op& x) { return x.kind == OpKind::kRecv && x.q_shard == op.q_shard; }));
        }
        if (op.kv_shard != home) {
          EXPECT_TRUE(has_dep(
              [&](const Op& x) { return x.kind == OpKind::kRecv && x.kv_shard == op.kv_shard; }));
        }
      } else if (op.kind == OpKind::kSend && (op.tensors & (kTensorO | kTensorDQ | kTensorDK))) {
        const bool q_side = op.q_shard >= 0;
        for (size_t j = 0; j < i; ++j) {
          const Op& x = prog.ops[j];
          if (x.kind != OpKind::kCompute || x.phase != op.phase) continue;
          if (q_side ? x.q_shard != op.q_shard : x.kv_shard != op.kv_shard) continue;
          const uint32_t idx = static_cast<uint32_t>(j);
          EXPECT_TRUE(std::find(prog.deps.begin() + op.dep_begin,
                                prog.deps.begin() + op.dep_begin + op.dep_count,
                                idx) != prog.deps.begin() + op.dep_begin + op.dep_count);
        }
        // No compute of that line after the send: the accumulator was handed over.
        for (size_t j = i + 1; j < prog.ops.size(); ++j) {
          const Op& x = prog.ops[j];
          if (x.kind != OpKind::kCompute || x.phase != op.phase) continue;
          EXPECT_FALSE(q_side ? x.q_shard == op.q_shard : x.kv_shard == op.kv_shard);
        }
      } else if (op.kind == OpKind::kMerge) {
        ASSERT_GT(i, 0u);
        EXPECT_EQ(prog.ops[i - 1].kind, OpKind::kRecv);
        EXPECT_TRUE(has_dep([&](const Op& x) { return &x == &prog.ops[i - 1]; }));
      }
    }
  }

  // 5. Zigzag causal: equal FLOPs per rank (within 1%) in each phase.
  if (c.layout == Layout::kZigzag && c.mask.kind == MaskKind::kCausal) {
    for (Phase ph : phases) {
      std::vector<double> flops(static_cast<size_t>(P), 0);
      for (int64_t r = 0; r < P; ++r) {
        for (const Op& op : s.ranks[r].ops) {
          if (op.kind == OpKind::kCompute && op.phase == ph) flops[r] += op.flops;
        }
      }
      const auto [lo, hi] = std::minmax_element(flops.begin(), flops.end());
      EXPECT_LE(*hi, *lo * 1.01);
    }
  }

  // 6. Mesh-Ulysses: collectives on the rank's group, in the same order on every member.
  if (c.U > 1) {
    ASSERT_EQ(static_cast<int64_t>(s.groups.size()), M);
    for (int64_t r = 0; r < P; ++r) {
      for (const Op& op : s.ranks[r].ops) {
        if (op.kind != OpKind::kAllToAll) continue;
        EXPECT_EQ(op.stream, StreamId::kCollective);
        const auto& g = s.groups[static_cast<size_t>(op.group)];
        EXPECT_NE(std::find(g.begin(), g.end(), r), g.end());
      }
    }
  }
}

std::vector<MeshCase> Configs() {
  std::vector<MeshCase> out;
  const std::vector<std::pair<int64_t, int64_t>> shapes = {{2, 4}, {4, 2}, {3, 5},
                                                           {1, 4}, {4, 1}, {3, 3}};
  for (const auto& [a, b] : shapes) {
    const int64_t P = a * b;
    for (int variant = 0; variant < 4; ++variant) {
      for (bool cache : {false, true}) {
        for (ReduceChain chain : {ReduceChain::kOwnerLast, ReduceChain::kOwnerFirst}) {
          MeshCase c;
          c.a = a;
          c.b = b;
          c.seq = 2 * P * 16;
          c.cache = cache;
          c.chain = chain;
          switch (variant) {
            case 0:  // GQA, causal zigzag
              break;
            case 1:  // MHA, full contiguous
              c.hq = c.hkv = 4;
              c.mask = Mask::Full();
              c.layout = Layout::kContiguous;
              break;
            case 2:  // sliding window, contiguous: many empty blocks
              c.mask = Mask::Window(20);
              c.layout = Layout::kContiguous;
              break;
            case 3:  // packed documents, zigzag
              c.mask = Mask::Documents({c.seq / 4, c.seq / 2, c.seq - c.seq / 4 - c.seq / 2});
              break;
          }
          c.name = std::to_string(a) + "x" + std::to_string(b) + " variant " +
                   std::to_string(variant) + (cache ? " cache" : "") +
                   (chain == ReduceChain::kOwnerFirst ? " owner-first" : "");
          out.push_back(c);
        }
      }
    }
  }
  // Single phases.
  for (Pass pass : {Pass::kForward, Pass::kBackward}) {
    MeshCase c;
    c.a = 2;
    c.b = 3;
    c.seq = 2 * 6 * 8;
    c.pass = pass;
    c.name = "2x3 " + std::string(PassName(pass));
    out.push_back(c);
  }
  // Mesh-Ulysses U = 2.
  for (const auto& [a, b] : std::vector<std::pair<int64_t, int64_t>>{{2, 2}, {2, 3}, {3, 1}}) {
    for (bool cache : {false, true}) {
      MeshCase c;
      c.U = 2;
      c.a = a;
      c.b = b;
      c.seq = 2 * a * b * 2 * 8;
      c.cache = cache;
      c.name = "mesh-ulysses U=2 " + std::to_string(a) + "x" + std::to_string(b) +
               (cache ? " cache" : "");
      out.push_back(c);
    }
  }
  return out;
}

TEST(MeshSchedule, AllConfigs) {
  for (const MeshCase& c : Configs()) CheckSchedule(c);
}

TEST(MeshSchedule, RankThreeOfTheGoldenTileFollowsTheStepTable) {
  // n = 9, a = b = 3, full mask, forward, owner-first: rank 3's program in global indices.
  MeshCase c;
  c.a = c.b = 3;
  c.seq = 9 * 4;
  c.mask = Mask::Full();
  c.layout = Layout::kContiguous;
  c.pass = Pass::kForward;
  c.chain = ReduceChain::kOwnerFirst;
  Built built;
  Build(c, built);
  ASSERT_TRUE(built.sched.ok());
  std::vector<std::string> got;
  for (const Op& op : built.sched->ranks[3].ops) {
    std::string e = std::to_string(op.step) + ":" + std::string(OpKindName(op.kind));
    if (op.kind == OpKind::kCompute)
      e += " Q" + std::to_string(op.q_shard) + "-KV" + std::to_string(op.kv_shard);
    if (op.kind == OpKind::kSend || op.kind == OpKind::kRecv) {
      e += " " + TensorNames(op.tensors) +
           (op.q_shard >= 0 ? std::to_string(op.q_shard) : std::to_string(op.kv_shard)) + " peer " +
           std::to_string(op.peer);
    }
    got.push_back(e);
  }
  // Peers of rank 3: Q send 5 (3-1 wraps in group 3..5), Q recv 4; KV send 0, KV recv 6.
  // clang-format off
  const std::vector<std::string> want = {
      "0:send K+V3 peer 0",   "0:recv K+V6 peer 6",   "0:compute Q3-KV3",
      "1:send K+V6 peer 0",   "1:recv K+V0 peer 6",   "1:compute Q3-KV6",
      "2:send Q3 peer 5",     "2:recv Q4 peer 4",     "2:compute Q3-KV0",
      "3:send Q4 peer 5",     "3:recv Q5 peer 4",     "3:send O+LSE3 peer 5",
      "3:compute Q4-KV3",     "3:compute Q4-KV6",     "3:compute Q4-KV0",
      "3:recv O+LSE4 peer 4", "3:merge",              "4:send O+LSE4 peer 5",
      "4:compute Q5-KV3",     "4:compute Q5-KV6",     "4:compute Q5-KV0",
      "4:recv O+LSE5 peer 4", "4:merge",              "5:send O+LSE5 peer 5",
      "5:recv O+LSE3 peer 4", "5:merge",
  };
  // clang-format on
  EXPECT_EQ(got, want);
}

TEST(MeshSchedule, RejectsBadShapes) {
  MeshCase c;
  c.a = 2;
  c.b = 2;
  c.seq = 2 * 4 * 8;
  Built built;
  Build(c, built);
  ASSERT_TRUE(built.sched.ok());
  // Tile does not cover the ranks.
  SchemeParams p = built.params;
  p.tile_b = 3;
  const PlanContext ctx(built.w, built.topo);
  EXPECT_FALSE(Expand(ctx, p).ok());
  // Sequence not divisible by 2 x 4 zigzag chunks.
  Workload w = built.w;
  w.seq_len = 2 * 4 * 8 + 4;
  const PlanContext ctx2(w, built.topo);
  EXPECT_FALSE(Expand(ctx2, built.params).ok());
  // Ulysses degree not dividing the KV heads (Hkv = 2).
  SchemeParams u = built.params;
  u.scheme = Scheme("mesh-ulysses");
  u.ulysses = 4;
  u.tile_a = 1;
  u.tile_b = 1;
  u.placement = CanonicalPlacement(planner::RankDims(u));
  EXPECT_FALSE(Expand(ctx, u).ok());
  // A placement that does not name the rank grid's dimensions.
  SchemeParams bad_placement = built.params;
  bad_placement.placement = {"q"};
  EXPECT_FALSE(Expand(ctx, bad_placement).ok());
}

// Issue 14: the search offers Mesh both reduce chains and, for causal masks, striped beside
// zigzag (ATTENTION2D and Mesh-Ulysses the layouts too, Mesh-Ulysses owner-last only); a full
// mask keeps the one balanced layout, contiguous.
TEST(MeshSearch, OffersBothChainsAndStripedForCausalMasks) {
  const Topology topo = testing::SmallCluster(4, 2);
  for (MaskKind kind : {MaskKind::kCausal, MaskKind::kFull}) {
    Workload w = testing::SmallWorkload();
    w.mask = kind == MaskKind::kCausal ? Mask::Causal() : Mask::Full();
    w.pass = Pass::kForwardBackward;
    const PlanContext ctx(w, topo);
    for (Scheme scheme : {Scheme("mesh"), Scheme("attention2d"), Scheme("mesh-ulysses")}) {
      std::set<Layout> layouts;
      std::set<ReduceChain> chains;
      for (const SchemeParams& p : MakeStrategy(scheme)->Enumerate(ctx)) {
        layouts.insert(p.layout);
        chains.insert(p.reduce_chain);
      }
      const std::set<Layout> want_layouts =
          kind == MaskKind::kCausal ? std::set<Layout>{Layout::kZigzag, Layout::kStriped}
                                    : std::set<Layout>{Layout::kContiguous};
      EXPECT_EQ(layouts, want_layouts) << SchemeName(scheme);
      if (scheme == Scheme("mesh")) {
        EXPECT_EQ(chains,
                  (std::set<ReduceChain>{ReduceChain::kOwnerLast, ReduceChain::kOwnerFirst}));
      } else {
        EXPECT_EQ(chains, std::set<ReduceChain>{ReduceChain::kOwnerLast}) << SchemeName(scheme);
      }
    }
  }
}

// Time estimate derived by hand, with a launch overhead (the 26% gap at 4096 GPUs: a backward
// block was charged 2.5 x (FLOP time + launch), where a backward kernel pays its launch once, as
// the simulator charges it).
//
// Workload: B = 1, S = 4096, Hq = Hkv = 8, d = 64, bf16, partials fp32, full mask, fwd+bwd, on one
// node of P = 4 ranks, tile a = 2 x b = 2, contiguous, owner-last chains, no cache.
// GPU: 100 TFLOP/s bf16, efficiency 1, launch overhead 5 us, backward at the forward's rate
// (BackwardTimeFactor 2.5). The link is so fast (1e18 B/s, no latency) that every transfer takes
// ~1e-12 s (partials are ~2-4 MB), so each step costs its compute and the time is the sum of the
// blocks and of the merges of incoming partials (a launch and 3 passes over HBM each).
// Per rank S/P = 1024 tokens; a full block of 1024 x 1024 pairs: 4 * 1024^2 * 8 * 64 = 2^31 FLOPs
// = 21.47483648 us at 1e14 FLOP/s.
//   forward block  = 21.47483648 + 5 = 26.47483648 us
//   backward block = 2.5 * 21.47483648 + 5 = 58.6870912 us (one launch, not 2.5)
// Each rank runs its a*b = 4 blocks per pass:
//   blocks = 4 * 26.47483648 + 4 * 58.6870912 = 105.89934592 + 234.7483648 = 340.64771072 us
// (Before the fix the backward block was 2.5 * 26.47483648 = 66.1870912 us: 370.64771072 us.)
// Merges: owner-last chains over a = b = 2 make one hop per chain, merged by its receiver:
//   forward O+LSE: 1024 x 8 x 64 x 4 + 1024 x 8 x 4 = 2129920 B: 5 + 3 x 2.12992 = 11.38976 us
//   backward dQ: 2097152 B: 5 + 6.291456 = 11.291456 us; dK+dV: 4194304 B: 5 + 12.582912 =
//   17.582912 us; in all 40.264128 us.
//   total = 340.64771072 + 40.264128 = 380.91183872 us
TEST(MeshEstimate, BackwardBlockPaysItsLaunchOnce) {
  Topology t = testing::SmallCluster(4, 1);
  t.gpu.peak_tflops = {{DType::kBf16, 100}};
  t.gpu.attention_efficiency = {{1, 1.0}};
  t.gpu.launch_overhead_s = 5e-6;
  t.gpu.hbm_bytes_per_s = 1e12;
  t.levels[0].bandwidth_bytes_per_s = 1e18;
  t.levels[0].latency_s = 0;
  t.levels[1].latency_s = 0;
  Workload w;
  w.batch = 1;
  w.seq_len = 4096;
  w.q_heads = 8;
  w.kv_heads = 8;
  w.head_dim = 64;
  w.dtype = DType::kBf16;
  w.partial_dtype = DType::kFp32;
  w.mask = Mask::Full();
  w.pass = Pass::kForwardBackward;
  const PlanContext ctx(w, t);
  SchemeParams p;
  p.scheme = Scheme("mesh");
  p.layout = Layout::kContiguous;
  p.tile_a = 2;
  p.tile_b = 2;
  p.cache_forward = false;
  p.reduce_chain = ReduceChain::kOwnerLast;
  p.placement = {"q", "kv"};
  const Estimate e = MakeStrategy(Scheme("mesh"))->Evaluate(ctx, p);
  ASSERT_TRUE(e.valid) << e.reason;
  EXPECT_NEAR(e.time_s, 380.91183872e-6, 1e-10);
}

}  // namespace
}  // namespace meshplan::planner
