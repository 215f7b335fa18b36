// The load-balanced dispatch (core/sequence/balanced_dispatch.h) and the balanced layout built on
// it.
#include "core/sequence/balanced_dispatch.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "core/sequence/layout.h"

namespace meshplan {
namespace {

// 16 tokens in chunks of 4, documents of 14 and 2 tokens, causal inside each. Row q of the long
// document sees q + 1 keys; rows 14 and 15 (the short one) see 1 and 2. Chunk work:
//   c0 = 1+2+3+4 = 10, c1 = 5+6+7+8 = 26, c2 = 9+10+11+12 = 42, c3 = 13+14 + 1+2 = 30.
// Two shards of two chunks: contiguous {c0,c1} {c2,c3} = 36 / 72, zigzag {c0,c3} {c1,c2} = 40 / 68.
// The greedy rule: c2 (42) to shard 0, c3 (30) to shard 1 (least work), c1 (26) to shard 1 (30 <
// 42; now full), c0 (10) to shard 0: {c0,c2} = 52, {c1,c3} = 56, a largest share of 56 < 68.
TEST(BalancedDispatch, HandDerivedDocumentsBeatZigzagAndContiguous) {
  const PairCounter counter(Mask::Documents({14, 2}), 16);
  const auto chunks = BalanceChunks(counter, 2, 2);
  EXPECT_EQ(chunks->chunk_tokens, 4);
  EXPECT_EQ(chunks->owner, (std::vector<int64_t>{0, 1, 0, 1}));
  EXPECT_EQ(chunks->chunks_of_shard, (std::vector<int64_t>{0, 2, 1, 3}));
  auto work = [&](int64_t x) { return counter.Count(4 * x, 4 * x + 4, 0, 16); };
  EXPECT_EQ(work(0) + work(2), 52);
  EXPECT_EQ(work(1) + work(3), 56);
}

// Every chunk goes to exactly one shard, and every shard gets its count, in ascending order.
TEST(BalancedDispatch, EveryChunkOnceAndEveryShardItsCount) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 40; ++trial) {
    const int64_t shards = 1 + static_cast<int64_t>(rng() % 9),
                  k = 1 + static_cast<int64_t>(rng() % 5);
    const int64_t seq = shards * k * (1 + static_cast<int64_t>(rng() % 6));
    std::vector<int64_t> docs;
    for (int64_t left = seq; left > 0;) {
      docs.push_back(std::min<int64_t>(left, 1 + static_cast<int64_t>(rng() % 13)));
      left -= docs.back();
    }
    const PairCounter counter(Mask::Documents(docs, trial % 2 == 1), seq);
    const auto chunks = BalanceChunks(counter, shards, k);
    ASSERT_EQ(chunks->owner.size(), static_cast<size_t>(shards * k));
    std::set<int64_t> seen;
    for (int64_t s = 0; s < shards; ++s) {
      const auto begin = chunks->chunks_of_shard.begin() + s * k, end = begin + k;
      EXPECT_TRUE(std::is_sorted(begin, end));
      for (auto it = begin; it != end; ++it) {
        EXPECT_EQ(chunks->owner[*it], s);
        EXPECT_TRUE(seen.insert(*it).second) << "chunk " << *it << " twice";
      }
    }
    EXPECT_EQ(seen.size(), static_cast<size_t>(shards * k));
  }
}

TEST(BalancedLayout, RangesAreTheShardsChunksAndValidateNamesWhatIsMissing) {
  const PairCounter counter(Mask::Documents({14, 2}), 16);
  ShardLayout made = MakeShardLayout(Layout::kBalanced, counter, 2, 1);
  ASSERT_NE(made.balanced, nullptr);
  // 2 shards x kBalancedChunksPerShard (4) chunks of 2 tokens.
  ASSERT_EQ(kBalancedChunksPerShard, 4);
  EXPECT_EQ(made.KernelBlockTokens(), 2);
  EXPECT_EQ(made.RangesPerShard(), 4);
  int64_t tokens = 0;
  for (int64_t s = 0; s < 2; ++s) {
    const auto ranges = made.Ranges(s);
    ASSERT_EQ(ranges.size(), 4u);
    for (const TokenRange& r : ranges) tokens += r.size();
  }
  EXPECT_EQ(tokens, 16);
  EXPECT_TRUE(made.Validate(counter.mask()).ok());
  // Without its chunks (a scheme that does not make them) the layout is refused. Which schemes
  // offer it is the planner's to say (tests/planner/schemes/registry_test.cc checks that message).
  const Status bare = ShardLayout{Layout::kBalanced, 16, 2, 1}.Validate(counter.mask());
  ASSERT_FALSE(bare.ok());
  EXPECT_NE(bare.message().find("balanced layout (load-balanced dispatch) has no chunk map"),
            std::string::npos)
      << bare.message();
  // 12 tokens do not split into 2 x 4 chunks: the divisibility is reported, not a missing split.
  const PairCounter twelve(Mask::Documents({10, 2}), 12);
  const Status odd = MakeShardLayout(Layout::kBalanced, twelve, 2, 1).Validate(twelve.mask());
  ASSERT_FALSE(odd.ok());
  EXPECT_NE(odd.message().find("not divisible by 8 (balanced layout: 8 chunks"), std::string::npos)
      << odd.message();
}

TEST(BalancedLayout, ParsesAndPrintsItsName) {
  auto layout = ParseLayout("balanced");
  ASSERT_TRUE(layout.ok());
  EXPECT_EQ(*layout, Layout::kBalanced);
  EXPECT_EQ(LayoutName(Layout::kBalanced), "balanced");
}

}  // namespace
}  // namespace meshplan
