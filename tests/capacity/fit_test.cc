// "What fits": the longest sequence against a hand-derived memory bound, the monotonicity the
// binary search relies on, and the smallest cluster for a step-time budget.
#include "capacity/fit.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "../planner/test_cluster.h"
#include "capacity/scale_topology.h"
#include "core/base/units.h"
#include "core/cluster/topology_toml.h"
#include "planner/context.h"
#include "planner/schemes/registry.h"
#include "planner/search.h"

namespace meshplan::capacity {
namespace {

using meshplan::testing::SmallCluster;

// Ring-Attention without the forward cache, fwd+bwd, e-byte inputs, fp32 partials; t = B*S/P
// tokens per rank, d the head dimension (planner/schemes/ring.cc, common.cc):
//   base  = Q + KV + O + LSE + dO + dQ + dKV + D = 4*Hq*t*d*e + 2*(2*Hkv*t*d*e) + 2*(4*Hq*t)
//   work  = max(fwd: 2 KV + O_p + LSE,  bwd: 2 KV + 2 dKV_p + dQ_p)
//         = 2*(2*Hkv*t*d*e) + max(4*Hq*t*d + 4*Hq*t, 2*(2*Hkv*t*d*4) + 4*Hq*t*d)
// With Hkv*d*16 >= 4*Hq the backward term is the larger, so with e = 2
//   peak  = t * (8*Hq*d + 8*Hkv*d + 8*Hq + 8*Hkv*d + 16*Hkv*d + 4*Hq*d)
//         = t * (12*Hq*d + 32*Hkv*d + 8*Hq)   bytes.
// The cached variants add (P-1) KV shards and drop 2 KV, so for P >= 3 they need more: the
// uncached plan sets the longest fitting sequence.
double RingPeakBytesPerToken(const Workload& w) {
  const double hq = static_cast<double>(w.q_heads), hkv = static_cast<double>(w.kv_heads),
               d = static_cast<double>(w.head_dim);
  return 12 * hq * d + 32 * hkv * d + 8 * hq;
}

TEST(LongestFittingSequence, RingMatchesTheHandComputedMemoryBound) {
  const Topology cluster = SmallCluster(8, 2);  // 16 GPUs of 80 GB
  const int64_t P = cluster.num_gpus();
  Workload w;  // B=1 Hq=64 Hkv=8 d=128 bf16 causal fwd+bwd
  ASSERT_EQ(w.dtype, DType::kBf16);
  ASSERT_EQ(w.partial_dtype, DType::kFp32);
  ASSERT_EQ(w.pass, Pass::kForwardBackward);
  const double per_token = RingPeakBytesPerToken(w);
  EXPECT_EQ(per_token, 131584.0);  // 12*64*128 + 32*8*128 + 8*64
  for (double reserve_gib : {0.0, 10.0, 70.0}) {
    const double reserved = reserve_gib * kGiB;
    // peak(S) = (S/P) * per_token <= memory - reserved; S a multiple of 2P.
    const double tokens_per_rank = std::floor((cluster.gpu.memory_bytes - reserved) / per_token);
    const int64_t expected = static_cast<int64_t>(tokens_per_rank) / 2 * 2 * P;
    auto fits = LongestFittingSequence(cluster, w, {Scheme("ring")}, reserved, kMaxSeqLen);
    ASSERT_TRUE(fits.ok()) << fits.status().message();
    ASSERT_EQ(fits->size(), 1u);
    const LongestFit& f = (*fits)[0];
    ASSERT_TRUE(f.found) << f.reason;
    EXPECT_EQ(f.granularity, 2 * P);
    EXPECT_EQ(f.seq_len, expected) << "reserve " << reserve_gib << " GiB";
    EXPECT_FALSE(f.at_limit);
    EXPECT_FALSE(f.params.cache_forward);
    EXPECT_DOUBLE_EQ(f.peak_memory_bytes, static_cast<double>(expected / P) * per_token);
    EXPECT_LE(f.peak_memory_bytes + reserved, cluster.gpu.memory_bytes);
    EXPECT_GT(static_cast<double>((expected + 2 * P) / P) * per_token + reserved,
              cluster.gpu.memory_bytes);
  }
}

TEST(LongestFittingSequence, LimitsAndReasons) {
  const Topology cluster = SmallCluster(8, 2);
  Workload w;
  // A cap below the memory bound is reported as reached.
  auto capped = LongestFittingSequence(cluster, w, {Scheme("ring")}, 0, int64_t{1} << 20);
  ASSERT_TRUE(capped.ok());
  EXPECT_EQ((*capped)[0].seq_len, int64_t{1} << 20);
  EXPECT_TRUE((*capped)[0].at_limit);
  // Ulysses over 16 GPUs needs 16 KV heads: the reason comes back, not a length.
  auto ulysses = LongestFittingSequence(cluster, w, {Scheme("ulysses")}, 0, kMaxSeqLen);
  ASSERT_TRUE(ulysses.ok());
  EXPECT_FALSE((*ulysses)[0].found);
  EXPECT_NE((*ulysses)[0].reason.find("exceeds the 8 KV heads"), std::string::npos)
      << (*ulysses)[0].reason;
  // Reserving all the memory: nothing fits even at the granularity.
  auto full =
      LongestFittingSequence(cluster, w, {Scheme("ring")}, cluster.gpu.memory_bytes, kMaxSeqLen);
  ASSERT_TRUE(full.ok());
  EXPECT_FALSE((*full)[0].found);
  EXPECT_NE((*full)[0].reason.find("does not fit even at 32 tokens"), std::string::npos)
      << (*full)[0].reason;
  // Errors: a cap below the granularity, a document mask.
  EXPECT_FALSE(LongestFittingSequence(cluster, w, {Scheme("ring")}, 0, 16).ok());
  w.mask = Mask::Documents({1024, 1024});
  w.seq_len = 2048;
  auto docs = LongestFittingSequence(cluster, w, {Scheme("ring")}, 0, kMaxSeqLen);
  ASSERT_FALSE(docs.ok());
  EXPECT_NE(docs.status().message().find("document mask"), std::string::npos);
  // Documents drawn from a distribution scale with the length: fit searches them.
  auto sampled_mask = ParseMask("docs-sampled:lognormal:median=256:sigma=0.5");
  ASSERT_TRUE(sampled_mask.ok());
  w.mask = *sampled_mask;
  auto sampled = LongestFittingSequence(cluster, w, {Scheme("ring")}, 0, kMaxSeqLen);
  ASSERT_TRUE(sampled.ok()) << sampled.status().message();
  EXPECT_TRUE((*sampled)[0].found) << (*sampled)[0].reason;
}

// The binary search's assumption: for every scheme, the smallest peak memory over its valid
// plans grows with the sequence length, so "fits" holds on a prefix of the candidates.
TEST(LongestFittingSequence, MemoryGrowsWithTheSequenceForEveryScheme) {
  const Topology cluster = SmallCluster(4, 4);  // 16 GPUs
  Workload w;
  w.q_heads = 32;
  w.kv_heads = 16;  // Ulysses up to 16 is valid
  const int64_t unit = FitGranularity(cluster.num_gpus());
  for (Scheme scheme : planner::AllSchemes()) {
    double previous_min_peak = 0;
    bool fitted = true;
    for (int64_t k = 1; k <= (int64_t{1} << 20); k = k * 3 / 2 + 1) {
      w.seq_len = k * unit;
      const planner::PlanContext ctx(w, cluster);
      planner::SearchOptions options;
      options.schemes = {scheme};
      const planner::SearchResult result = planner::Search(ctx, options);
      ASSERT_FALSE(result.ranked.empty())
          << SchemeName(scheme) << " S=" << w.seq_len;  // valid at every multiple
      double min_peak = result.ranked.front().peak_memory_bytes;
      for (const planner::Estimate& e : result.ranked)
        min_peak = std::min(min_peak, e.peak_memory_bytes);
      EXPECT_GT(min_peak, previous_min_peak) << SchemeName(scheme) << " S=" << w.seq_len;
      previous_min_peak = min_peak;
      const bool fits = result.ranked.front().fits;
      EXPECT_EQ(fits, min_peak <= cluster.gpu.memory_bytes) << SchemeName(scheme);
      EXPECT_TRUE(fitted || !fits) << SchemeName(scheme) << " fits again at S=" << w.seq_len;
      fitted = fits;
    }
    EXPECT_FALSE(fitted) << SchemeName(scheme)
                         << ": the scan should reach sequences that do not fit";
  }
  // And the search result is the last fitting candidate of such a scan.
  auto fits =
      LongestFittingSequence(cluster, w, {Scheme("mesh"), Scheme("allgather-kv")}, 0, kMaxSeqLen);
  ASSERT_TRUE(fits.ok());
  for (const LongestFit& f : *fits) {
    ASSERT_TRUE(f.found);
    for (int64_t s : {f.seq_len, f.seq_len + unit}) {
      w.seq_len = s;
      const planner::PlanContext ctx(w, cluster);
      planner::SearchOptions options;
      options.schemes = {f.scheme};
      EXPECT_EQ(planner::Search(ctx, options).ranked.front().fits, s == f.seq_len)
          << SchemeName(f.scheme);
    }
  }
}

// A compute-bound cluster (a network so fast that communication costs nothing, constant kernel
// efficiency), full mask: every scheme's step takes F / (P * rate) with F = 3.5 * 4*B*S^2*Hq*d,
// so the smallest P (multiples of 8) meeting a budget T is the first multiple of 8 >= F/(rate*T).
TEST(SmallestClusterFor, ComputeBoundClusterFollowsTheFlopCount) {
  Topology cluster = SmallCluster(8, 1, /*nvlink_gbps=*/1e9, /*ib_gbps=*/1e9, 0, 0);
  Workload w;
  w.mask = Mask::Full();
  w.seq_len = int64_t{8} * 1024 * 105;  // divisible by 8m for m = 1..8 (and 2 * 8m for zigzag)
  const double rate = 1000e12 * 0.5;    // bf16 peak x efficiency
  const double flops =
      3.5 * 4.0 * static_cast<double>(w.seq_len) * static_cast<double>(w.seq_len) * 64 * 128;
  const double budget = flops / (rate * 44);  // P >= 44 -> 48
  auto found = SmallestClusterFor(cluster, w, budget, {}, 0, 256);
  ASSERT_TRUE(found.ok()) << found.status().message();
  EXPECT_EQ(found->gpus, 48);
  EXPECT_EQ(found->sizes_tried, 6);
  EXPECT_NEAR(found->time_s, flops / (rate * 48), 1e-3 * found->time_s);
  EXPECT_LE(found->time_s, budget);

  // The next smaller size's best fitting plan misses the budget.
  auto smaller = ScaleTopology(cluster, 40);
  ASSERT_TRUE(smaller.ok());
  const planner::PlanContext ctx(w, *smaller);
  const planner::SearchResult result = planner::Search(ctx, {});
  ASSERT_FALSE(result.ranked.empty());
  EXPECT_GT(result.ranked.front().time_s, budget);
}

TEST(SmallestClusterFor, DefaultClusterAnswerIsMinimal) {
  const Topology dgx = DefaultTopology();
  Workload w;
  w.seq_len = int64_t{2} << 20;
  auto found = SmallestClusterFor(dgx, w, 10.0, {}, 0, 1024);
  ASSERT_TRUE(found.ok()) << found.status().message();
  EXPECT_LE(found->time_s, 10.0);
  EXPECT_EQ(found->gpus % 8, 0);
  for (int64_t gpus = 8; gpus < found->gpus; gpus += 8) {
    auto scaled = ScaleTopology(dgx, gpus);
    ASSERT_TRUE(scaled.ok());
    const planner::PlanContext ctx(w, *scaled);
    const planner::SearchResult result = planner::Search(ctx, {});
    if (!result.ranked.empty() && result.ranked.front().fits) {
      EXPECT_GT(result.ranked.front().time_s, 10.0) << gpus;
    }
  }
}

TEST(SmallestClusterFor, ImpossibleBudgetNamesTheBestTimeReached) {
  const Topology dgx = DefaultTopology();
  Workload w;
  w.seq_len = int64_t{1} << 20;
  auto none = SmallestClusterFor(dgx, w, 1e-3, {Scheme("ring")}, 0, 64);
  ASSERT_FALSE(none.ok());
  const std::string& m = none.status().message();
  EXPECT_NE(m.find("no cluster of up to 64 GPUs"), std::string::npos) << m;
  EXPECT_NE(m.find("fastest fitting plan takes"), std::string::npos) << m;
  EXPECT_NE(m.find("ring"), std::string::npos) << m;
  EXPECT_NE(m.find("on 64 GPUs"), std::string::npos) << m;
  EXPECT_FALSE(SmallestClusterFor(dgx, w, 0, {}, 0, 64).ok());
  EXPECT_FALSE(SmallestClusterFor(dgx, w, 1, {}, 0, 4).ok());
}

// Issue 17: `fit --max-gpus 2^62 --budget-s 1e-9` did not finish in 60 s (5.8e17 sizes to try).
TEST(SmallestClusterFor, MaxGpusOf2To62IsRefusedBeforeAnySearch) {
  Workload w;
  w.seq_len = int64_t{64} << 10;
  auto none = SmallestClusterFor(DefaultTopology(), w, 1e-9, {}, 0, int64_t{1} << 62);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(
      none.status().message(),
      "fit: --max-gpus 4611686018427387904 is more than the 10000000 GPUs a topology may have");
}

TEST(SmallestClusterFor, MoreSizesThanTheLimitAreRefusedBeforeAnySearch) {
  // The default cluster grows by whole 8-GPU nodes: 10^7 / 8 = 1,250,000 sizes > 4096.
  Workload w;
  auto none = SmallestClusterFor(DefaultTopology(), w, 1e-9, {}, 0, 10'000'000);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().message(),
            "fit: --max-gpus 10000000 means 1250000 cluster sizes of 8 GPUs to try, more than the "
            "4096 one search "
            "tries; lower --max-gpus");
}

TEST(SmallestClusterFor, SearchStopsAtItsTimeLimitSayingHowFarItGot) {
  // With no time at all, the first size (8 GPUs) is still tried, then the search stops.
  Workload w;
  w.seq_len = int64_t{64} << 10;
  FitSearchLimits limits;
  limits.max_seconds = 0;
  auto none = SmallestClusterFor(DefaultTopology(), w, 1e-9, {Scheme("ring")}, 0, 64, limits);
  ASSERT_FALSE(none.ok());
  const std::string& m = none.status().message();
  EXPECT_EQ(m.rfind("fit: stopped after ", 0), 0u) << m;
  EXPECT_NE(m.find("(the limit is 0.0 us), having tried 1 cluster sizes up to 8 GPUs without "
                   "meeting the budget"),
            std::string::npos)
      << m;
}

TEST(SmallestClusterFor, ABudgetThatIsNotAFinitePositiveNumberIsRefused) {
  Workload w;
  for (double budget : {0.0, -1.0, std::nan(""), HUGE_VAL}) {
    auto none = SmallestClusterFor(DefaultTopology(), w, budget, {}, 0, 64);
    ASSERT_FALSE(none.ok()) << budget;
    EXPECT_EQ(none.status().message(),
              "fit: the time budget must be positive and finite (seconds)");
  }
}

}  // namespace
}  // namespace meshplan::capacity
