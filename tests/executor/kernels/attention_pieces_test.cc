// The split of a block into fused-attention pieces (executor/kernels/attention_pieces.h):
// hand-derived cases, and on many layouts a brute-force check that the pieces cover every visible
// (query, key) pair exactly once and no hidden pair, the visibility of a piece's pair being read
// off its mask alone (so a wrong alignment or offset shows up).
#include "executor/kernels/attention_pieces.h"

#include <gtest/gtest.h>

#include <numeric>
#include <random>

namespace meshplan::exec {
namespace {

std::vector<int64_t> Range(int64_t first, int64_t count) {
  std::vector<int64_t> v(static_cast<size_t>(count));
  std::iota(v.begin(), v.end(), first);
  return v;
}

std::vector<int64_t> Concat(std::vector<int64_t> a, const std::vector<int64_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Whether the piece's mask shows key row j of the block to query row i of the block.
bool PieceShows(const AttentionPiece& p, int64_t i, int64_t j) {
  if (i < p.q_row0 || i >= p.q_row0 + p.q_rows || j < p.k_row0 || j >= p.k_row0 + p.k_rows)
    return false;
  const int64_t a = i - p.q_row0, b = j - p.k_row0;
  switch (p.mask) {
    case PieceMask::kFull:
      return true;
    case PieceMask::kCausalTopLeft:
      return b <= a;
    case PieceMask::kCausalBottomRight:
      return b <= a + (p.k_rows - p.q_rows);
  }
  return false;
}

// Every pair is shown by exactly as many pieces as it is visible (1 or 0).
void ExpectExactCover(const std::vector<int64_t>& q, const std::vector<int64_t>& k, MaskKind kind,
                      const std::vector<AttentionPiece>& pieces) {
  for (const AttentionPiece& p : pieces) {
    ASSERT_GT(p.q_rows, 0);
    ASSERT_GT(p.k_rows, 0);
    if (p.mask == PieceMask::kCausalBottomRight) {
      ASSERT_GE(p.k_rows, p.q_rows);
    }
    if (p.mask == PieceMask::kCausalTopLeft) {
      ASSERT_EQ(p.k_rows, p.q_rows);
    }
    // Inside a causal piece the Q and K positions go up by one common step (1 for consecutive
    // runs, the stripe count for striped blocks), which is what lets a mask on row offsets stand
    // for the mask on tokens; the pair-by-pair check below proves that it does (a full piece shows
    // every pair of its rows, whatever their positions).
    if (p.mask != PieceMask::kFull) {
      int64_t step = 0;
      if (p.q_rows > 1) step = q[p.q_row0 + 1] - q[p.q_row0];
      if (step == 0 && p.k_rows > 1) step = k[p.k_row0 + 1] - k[p.k_row0];
      for (int64_t i = 1; i < p.q_rows; ++i) ASSERT_EQ(q[p.q_row0 + i], q[p.q_row0] + step * i);
      for (int64_t j = 1; j < p.k_rows; ++j) ASSERT_EQ(k[p.k_row0 + j], k[p.k_row0] + step * j);
    }
  }
  for (size_t i = 0; i < q.size(); ++i) {
    for (size_t j = 0; j < k.size(); ++j) {
      const int visible = kind == MaskKind::kFull || k[j] <= q[i] ? 1 : 0;
      int shown = 0;
      for (const AttentionPiece& p : pieces)
        shown += PieceShows(p, static_cast<int64_t>(i), static_cast<int64_t>(j));
      ASSERT_EQ(shown, visible) << "query row " << i << " (token " << q[i] << "), key row " << j
                                << " (token " << k[j] << ")";
    }
  }
}

TEST(AttentionPieces, DiagonalBlockIsOneTopLeftTriangle) {
  // Q and K both hold tokens 8..15: key j visible to query i iff j <= i.
  const auto pieces = SplitIntoPieces(Range(8, 8), Range(8, 8), MaskKind::kCausal, 16);
  ASSERT_TRUE(pieces);
  ASSERT_EQ(pieces->size(), 1u);
  EXPECT_EQ((*pieces)[0].mask, PieceMask::kCausalTopLeft);
  EXPECT_EQ((*pieces)[0].q_rows, 8);
  EXPECT_EQ((*pieces)[0].k_rows, 8);
}

TEST(AttentionPieces, KeysBeforeQueriesAreFullAndKeysAfterAreNothing) {
  // Keys 0..7 all precede queries 8..15: one full rectangle. Keys 16..23 all follow: nothing.
  const auto before = SplitIntoPieces(Range(8, 8), Range(0, 8), MaskKind::kCausal, 16);
  ASSERT_TRUE(before);
  ASSERT_EQ(before->size(), 1u);
  EXPECT_EQ((*before)[0].mask, PieceMask::kFull);
  const auto after = SplitIntoPieces(Range(8, 8), Range(16, 8), MaskKind::kCausal, 16);
  ASSERT_TRUE(after);
  EXPECT_TRUE(after->empty());
}

TEST(AttentionPieces, OffsetDiagonalIsABottomRightTriangleThenAFullRectangle) {
  // Queries 4..11 against keys 0..7: c = 4. Query row i sees keys j <= i + 4, so rows 0..3 see
  // 5..8 keys (a triangle of 4 rows over the first 4 + 4 = 8 keys, bottom-right aligned: row 0
  // sees j <= 0 + (8 - 4) = 4), and rows 4..7 see all 8 keys (a full rectangle).
  const auto pieces = SplitIntoPieces(Range(4, 8), Range(0, 8), MaskKind::kCausal, 16);
  ASSERT_TRUE(pieces);
  ASSERT_EQ(pieces->size(), 2u);
  EXPECT_EQ((*pieces)[0].mask, PieceMask::kCausalBottomRight);
  EXPECT_EQ((*pieces)[0].q_row0, 0);
  EXPECT_EQ((*pieces)[0].q_rows, 4);
  EXPECT_EQ((*pieces)[0].k_rows, 8);
  EXPECT_EQ((*pieces)[1].mask, PieceMask::kFull);
  EXPECT_EQ((*pieces)[1].q_row0, 4);
  EXPECT_EQ((*pieces)[1].q_rows, 4);
}

TEST(AttentionPieces, ZigzagShardsSplitIntoTheirChunkPairs) {
  // 4 ranks, 8 chunks of 4 tokens: rank 0 holds chunks 0 and 7, rank 1 chunks 1 and 6.
  const auto r0 = Concat(Range(0, 4), Range(28, 4));
  const auto r1 = Concat(Range(4, 4), Range(24, 4));
  // Rank 0's queries against rank 1's keys: chunk 0 vs 1 and 6: nothing; chunk 7 vs both: full,
  // one rectangle over all 8 key rows (adjacent rows, though not consecutive positions).
  const auto pieces = SplitIntoPieces(r0, r1, MaskKind::kCausal, 16);
  ASSERT_TRUE(pieces);
  ASSERT_EQ(pieces->size(), 1u);
  EXPECT_EQ((*pieces)[0].mask, PieceMask::kFull);
  EXPECT_EQ((*pieces)[0].q_row0, 4);
  EXPECT_EQ((*pieces)[0].q_rows, 4);
  EXPECT_EQ((*pieces)[0].k_row0, 0);
  EXPECT_EQ((*pieces)[0].k_rows, 8);
  ExpectExactCover(r0, r1, MaskKind::kCausal, *pieces);
}

TEST(AttentionPieces, GatheredZigzagKeysNeedFewPieces) {
  // All-gather of 8 zigzag shards of 16 chunks (4 tokens each): key rows hold c0 c15 c1 c14 ...
  // c7 c8 (rows 0-3: c0, 4-7: c15, 8-11: c1, ...). Rank 0's queries are c0 and c15.
  // c0 sees only itself: a triangle over rows 0-3. c15 sees c0 (full, rows 0-3), itself (a
  // triangle, rows 4-7) and c1..c14 (full, rows 8-63, merged into one rectangle): 4 pieces.
  std::vector<int64_t> keys;
  for (int r = 0; r < 8; ++r) keys = Concat(Concat(keys, Range(4 * r, 4)), Range(4 * (15 - r), 4));
  const auto q = Concat(Range(0, 4), Range(60, 4));
  const auto pieces = SplitIntoPieces(q, keys, MaskKind::kCausal, 16);
  ASSERT_TRUE(pieces);
  EXPECT_EQ(pieces->size(), 4u);
  ExpectExactCover(q, keys, MaskKind::kCausal, *pieces);
}

TEST(AttentionPieces, AFullMaskIsOneRectangleWhateverThePositions) {
  std::vector<int64_t> striped;
  for (int64_t t = 0; t < 64; t += 4) striped.push_back(t);
  const auto full = SplitIntoPieces(striped, striped, MaskKind::kFull, 16);
  ASSERT_TRUE(full);
  ASSERT_EQ(full->size(), 1u);
  ExpectExactCover(striped, striped, MaskKind::kFull, *full);
}

std::vector<int64_t> Stripe(int64_t first, int64_t step, int64_t rows) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < rows; ++i) v.push_back(first + step * i);
  return v;
}

TEST(AttentionPieces, StripedCausalBlocksAreOneOrTwoPieces) {
  // 4 stripes, 32 rows each. Rank 1's queries 1 + 4i against its own keys: j <= i, one top-left
  // triangle. Against rank 0's keys 4j: 4j <= 1 + 4i iff j <= i, the same triangle. Against rank
  // 2's keys 2 + 4j: j <= i - 1 (floor(-1/4) = -1), so query row 0 sees nothing and rows 1..31
  // see a triangle of keys 0..30: one top-left triangle from row 1.
  const auto own = SplitIntoPieces(Stripe(1, 4, 32), Stripe(1, 4, 32), MaskKind::kCausal, 16);
  ASSERT_TRUE(own);
  ASSERT_EQ(own->size(), 1u);
  EXPECT_EQ((*own)[0].mask, PieceMask::kCausalTopLeft);
  ExpectExactCover(Stripe(1, 4, 32), Stripe(1, 4, 32), MaskKind::kCausal, *own);
  const auto earlier = SplitIntoPieces(Stripe(1, 4, 32), Stripe(0, 4, 32), MaskKind::kCausal, 16);
  ASSERT_TRUE(earlier);
  ExpectExactCover(Stripe(1, 4, 32), Stripe(0, 4, 32), MaskKind::kCausal, *earlier);
  const auto later = SplitIntoPieces(Stripe(1, 4, 32), Stripe(2, 4, 32), MaskKind::kCausal, 16);
  ASSERT_TRUE(later);
  ASSERT_EQ(later->size(), 1u);
  EXPECT_EQ((*later)[0].q_row0, 1);
  EXPECT_EQ((*later)[0].q_rows, 31);
  EXPECT_EQ((*later)[0].k_rows, 31);
  ExpectExactCover(Stripe(1, 4, 32), Stripe(2, 4, 32), MaskKind::kCausal, *later);
}

TEST(AttentionPieces, UnequalStepsAndOtherMasksAreNotExpressible) {
  // Steps 4 and 8 on more than 16 rows each: neither runs of consecutive positions nor one step.
  EXPECT_FALSE(SplitIntoPieces(Stripe(0, 4, 32), Stripe(0, 8, 32), MaskKind::kCausal, 16));
  std::vector<int64_t> uneven = Stripe(0, 4, 32);
  uneven.back() += 1;  // the last step is 5
  EXPECT_FALSE(SplitIntoPieces(uneven, uneven, MaskKind::kCausal, 16));
  EXPECT_FALSE(SplitIntoPieces(Range(0, 8), Range(0, 8), MaskKind::kWindow, 16));     // window
  EXPECT_FALSE(SplitIntoPieces(Range(0, 8), Range(0, 8), MaskKind::kDocuments, 16));  // documents
}

TEST(AttentionPieces, RandomStripedBlocksAreCoveredExactly) {
  std::mt19937_64 gen(23);
  for (int trial = 0; trial < 300; ++trial) {
    const int64_t stripes = 2 + static_cast<int64_t>(gen() % 7);
    const int64_t rows = 1 + static_cast<int64_t>(gen() % 40);
    const int64_t qi = static_cast<int64_t>(gen() % stripes),
                  kj = static_cast<int64_t>(gen() % stripes);
    // Keys from a later or earlier part of the sequence too (gathered or shifted shards).
    const int64_t shift = stripes * (static_cast<int64_t>(gen() % 5) - 2);
    const auto q = Stripe(qi, stripes, rows);
    const auto k = Stripe(kj + shift, stripes, 1 + static_cast<int64_t>(gen() % 40));
    const auto pieces = SplitIntoPieces(q, k, MaskKind::kCausal, 2);
    ASSERT_TRUE(pieces) << "stripes " << stripes << " rows " << rows;
    ExpectExactCover(q, k, MaskKind::kCausal, *pieces);
    if (HasFatalFailure()) return;
  }
}

TEST(AttentionPieces, RandomRunLayoutsAreCoveredExactly) {
  std::mt19937_64 gen(11);
  for (int trial = 0; trial < 300; ++trial) {
    // Up to 3 runs per side at random offsets and lengths (overlapping Q and K tokens included).
    auto side = [&](int runs) {
      std::vector<int64_t> v;
      int64_t next = static_cast<int64_t>(gen() % 8);
      for (int r = 0; r < runs; ++r) {
        const int64_t len = 1 + static_cast<int64_t>(gen() % 9);
        v = Concat(v, Range(next, len));
        next += len + 1 + static_cast<int64_t>(gen() % 12);
      }
      return v;
    };
    const auto q = side(1 + static_cast<int>(gen() % 3));
    const auto k = side(1 + static_cast<int>(gen() % 3));
    for (MaskKind kind : {MaskKind::kFull, MaskKind::kCausal}) {
      const auto pieces = SplitIntoPieces(q, k, kind, 64);
      ASSERT_TRUE(pieces);
      ExpectExactCover(q, k, kind, *pieces);
      if (HasFatalFailure()) return;
    }
  }
}

}  // namespace
}  // namespace meshplan::exec
