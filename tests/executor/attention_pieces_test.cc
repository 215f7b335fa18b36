// The split of a block into fused-attention pieces (executor/attention_pieces.h): hand-derived
// cases, and on many layouts a brute-force check that the pieces cover every visible (query, key)
// pair exactly once and no hidden pair, the visibility of a piece's pair being read off its mask
// alone (so a wrong alignment or offset shows up).
#include "executor/attention_pieces.h"

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
  if (i < p.q_row0 || i >= p.q_row0 + p.q_rows || j < p.k_row0 || j >= p.k_row0 + p.k_rows) return false;
  const int64_t a = i - p.q_row0, b = j - p.k_row0;
  switch (p.mask) {
    case PieceMask::kFull: return true;
    case PieceMask::kCausalTopLeft: return b <= a;
    case PieceMask::kCausalBottomRight: return b <= a + (p.k_rows - p.q_rows);
  }
  return false;
}

// Every pair is shown by exactly as many pieces as it is visible (1 or 0).
void ExpectExactCover(const std::vector<int64_t>& q, const std::vector<int64_t>& k, int32_t kind,
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
    // Inside a causal piece positions are consecutive, so the mask on row offsets is the mask on
    // tokens (a full piece shows every pair of its rows, whatever their positions).
    if (p.mask != PieceMask::kFull) {
      for (int64_t i = 1; i < p.q_rows; ++i) ASSERT_EQ(q[p.q_row0 + i], q[p.q_row0] + i);
      for (int64_t j = 1; j < p.k_rows; ++j) ASSERT_EQ(k[p.k_row0 + j], k[p.k_row0] + j);
    }
  }
  for (size_t i = 0; i < q.size(); ++i) {
    for (size_t j = 0; j < k.size(); ++j) {
      const int visible = kind == 0 || k[j] <= q[i] ? 1 : 0;
      int shown = 0;
      for (const AttentionPiece& p : pieces) shown += PieceShows(p, static_cast<int64_t>(i), static_cast<int64_t>(j));
      ASSERT_EQ(shown, visible) << "query row " << i << " (token " << q[i] << "), key row " << j << " (token "
                                << k[j] << ")";
    }
  }
}

TEST(AttentionPieces, DiagonalBlockIsOneTopLeftTriangle) {
  // Q and K both hold tokens 8..15: key j visible to query i iff j <= i.
  const auto pieces = SplitIntoPieces(Range(8, 8), Range(8, 8), 1, 16);
  ASSERT_TRUE(pieces);
  ASSERT_EQ(pieces->size(), 1u);
  EXPECT_EQ((*pieces)[0].mask, PieceMask::kCausalTopLeft);
  EXPECT_EQ((*pieces)[0].q_rows, 8);
  EXPECT_EQ((*pieces)[0].k_rows, 8);
}

TEST(AttentionPieces, KeysBeforeQueriesAreFullAndKeysAfterAreNothing) {
  // Keys 0..7 all precede queries 8..15: one full rectangle. Keys 16..23 all follow: nothing.
  const auto before = SplitIntoPieces(Range(8, 8), Range(0, 8), 1, 16);
  ASSERT_TRUE(before);
  ASSERT_EQ(before->size(), 1u);
  EXPECT_EQ((*before)[0].mask, PieceMask::kFull);
  const auto after = SplitIntoPieces(Range(8, 8), Range(16, 8), 1, 16);
  ASSERT_TRUE(after);
  EXPECT_TRUE(after->empty());
}

TEST(AttentionPieces, OffsetDiagonalIsABottomRightTriangleThenAFullRectangle) {
  // Queries 4..11 against keys 0..7: c = 4. Query row i sees keys j <= i + 4, so rows 0..3 see
  // 5..8 keys (a triangle of 4 rows over the first 4 + 4 = 8 keys, bottom-right aligned: row 0
  // sees j <= 0 + (8 - 4) = 4), and rows 4..7 see all 8 keys (a full rectangle).
  const auto pieces = SplitIntoPieces(Range(4, 8), Range(0, 8), 1, 16);
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
  const auto pieces = SplitIntoPieces(r0, r1, 1, 16);
  ASSERT_TRUE(pieces);
  ASSERT_EQ(pieces->size(), 1u);
  EXPECT_EQ((*pieces)[0].mask, PieceMask::kFull);
  EXPECT_EQ((*pieces)[0].q_row0, 4);
  EXPECT_EQ((*pieces)[0].q_rows, 4);
  EXPECT_EQ((*pieces)[0].k_row0, 0);
  EXPECT_EQ((*pieces)[0].k_rows, 8);
  ExpectExactCover(r0, r1, 1, *pieces);
}

TEST(AttentionPieces, GatheredZigzagKeysNeedFewPieces) {
  // All-gather of 8 zigzag shards of 16 chunks (4 tokens each): key rows hold c0 c15 c1 c14 ...
  // c7 c8 (rows 0-3: c0, 4-7: c15, 8-11: c1, ...). Rank 0's queries are c0 and c15.
  // c0 sees only itself: a triangle over rows 0-3. c15 sees c0 (full, rows 0-3), itself (a
  // triangle, rows 4-7) and c1..c14 (full, rows 8-63, merged into one rectangle): 4 pieces.
  std::vector<int64_t> keys;
  for (int r = 0; r < 8; ++r) keys = Concat(Concat(keys, Range(4 * r, 4)), Range(4 * (15 - r), 4));
  const auto q = Concat(Range(0, 4), Range(60, 4));
  const auto pieces = SplitIntoPieces(q, keys, 1, 16);
  ASSERT_TRUE(pieces);
  EXPECT_EQ(pieces->size(), 4u);
  ExpectExactCover(q, keys, 1, *pieces);
}

TEST(AttentionPieces, AFullMaskIsOneRectangleWhateverThePositions) {
  std::vector<int64_t> striped;
  for (int64_t t = 0; t < 64; t += 4) striped.push_back(t);
  const auto full = SplitIntoPieces(striped, striped, 0, 16);
  ASSERT_TRUE(full);
  ASSERT_EQ(full->size(), 1u);
  ExpectExactCover(striped, striped, 0, *full);
}

TEST(AttentionPieces, StripedCausalAndOtherMasksAreNotExpressible) {
  std::vector<int64_t> striped;
  for (int64_t t = 0; t < 128; t += 4) striped.push_back(t);
  EXPECT_FALSE(SplitIntoPieces(striped, striped, 1, 16));  // 32 runs of one row each, past 16
  EXPECT_FALSE(SplitIntoPieces(Range(0, 8), Range(0, 8), 2, 16));  // window
  EXPECT_FALSE(SplitIntoPieces(Range(0, 8), Range(0, 8), 3, 16));  // documents
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
    for (int32_t kind : {0, 1}) {
      const auto pieces = SplitIntoPieces(q, k, kind, 64);
      ASSERT_TRUE(pieces);
      ExpectExactCover(q, k, kind, *pieces);
      if (HasFatalFailure()) return;
    }
  }
}

}  // namespace
}  // namespace meshplan::exec
