// The split of a block into fused-attention pieces (executor/kernels/attention_pieces.h):
// hand-derived cases, and on many layouts a brute-force check that the pieces cover every visible
// (query, key) pair exactly once and no hidden pair, the visibility of a pair in the block being
// core/sequence/mask_rule.h's rule and in a piece being read off the piece's mask alone (so a wrong
// alignment, offset or band width shows up).
#include "executor/kernels/attention_pieces.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

namespace meshplan::exec {
namespace {

std::vector<int64_t> Indices(int64_t first, int64_t count) {
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
    case PieceMask::kBand:
      return a + p.band_offset - p.band_width < b && b <= a + p.band_offset;
  }
  return false;
}

MaskParams Window(int64_t w) {
  MaskParams m;
  m.kind = MaskKind::kWindow;
  m.window = w;
  return m;
}

MaskParams Kind(MaskKind kind) {
  MaskParams m;
  m.kind = kind;
  return m;
}

// Every pair is shown by exactly as many pieces as it is visible (1 or 0) under `mask`, the
// documents of a document mask starting at `doc_starts` (attention_pieces.h's convention).
void ExpectExactCover(const std::vector<int64_t>& q, const std::vector<int64_t>& k,
                      const MaskParams& mask, const std::vector<int64_t>& doc_starts,
                      const std::vector<AttentionPiece>& pieces) {
  // The document index of a position: the last start at or before it (-1 before the first).
  auto doc_of = [&](int64_t t) {
    return static_cast<int64_t>(std::upper_bound(doc_starts.begin(), doc_starts.end(), t) -
                                doc_starts.begin()) -
           1;
  };
  for (const AttentionPiece& p : pieces) {
    ASSERT_GT(p.q_rows, 0);
    ASSERT_GT(p.k_rows, 0);
    if (p.mask == PieceMask::kCausalBottomRight) {
      ASSERT_GE(p.k_rows, p.q_rows);
    }
    if (p.mask == PieceMask::kCausalTopLeft) {
      ASSERT_EQ(p.k_rows, p.q_rows);
    }
    if (p.mask == PieceMask::kBand) {
      // The band's contract (what a diagonal band mask with a left bound can take): no more
      // queries than keys, 0 <= offset <= width - 1, and a lower edge that cuts the piece (the
      // last query row does not see key 0).
      ASSERT_LE(p.q_rows, p.k_rows);
      ASSERT_GE(p.band_width, 1);
      ASSERT_GE(p.band_offset, 0);
      ASSERT_LE(p.band_offset, p.band_width - 1);
      ASSERT_GE(p.q_rows - 1 + p.band_offset - p.band_width, 0);
    } else {
      ASSERT_EQ(p.band_offset, 0);
      ASSERT_EQ(p.band_width, 0);
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
      const int visible = VisibleInDocuments(mask, q[i], k[j], doc_of(q[i]), doc_of(k[j])) ? 1 : 0;
      int shown = 0;
      for (const AttentionPiece& p : pieces)
        shown += PieceShows(p, static_cast<int64_t>(i), static_cast<int64_t>(j));
      ASSERT_EQ(shown, visible) << "query row " << i << " (token " << q[i] << "), key row " << j
                                << " (token " << k[j] << ")";
    }
  }
}

void ExpectExactCover(const std::vector<int64_t>& q, const std::vector<int64_t>& k,
                      const MaskParams& mask, const std::vector<AttentionPiece>& pieces) {
  ExpectExactCover(q, k, mask, {}, pieces);
}

void ExpectExactCover(const std::vector<int64_t>& q, const std::vector<int64_t>& k, MaskKind kind,
                      const std::vector<AttentionPiece>& pieces) {
  ExpectExactCover(q, k, Kind(kind), pieces);
}

TEST(AttentionPieces, DiagonalBlockIsOneTopLeftTriangle) {
  // Q and K both hold tokens 8..15: key j visible to query i iff j <= i.
  const auto pieces = SplitIntoPieces(Indices(8, 8), Indices(8, 8), MaskKind::kCausal, 16);
  ASSERT_TRUE(pieces);
  ASSERT_EQ(pieces->size(), 1u);
  EXPECT_EQ((*pieces)[0].mask, PieceMask::kCausalTopLeft);
  EXPECT_EQ((*pieces)[0].q_rows, 8);
  EXPECT_EQ((*pieces)[0].k_rows, 8);
}

TEST(AttentionPieces, KeysBeforeQueriesAreFullAndKeysAfterAreNothing) {
  // Keys 0..7 all precede queries 8..15: one full rectangle. Keys 16..23 all follow: nothing.
  const auto before = SplitIntoPieces(Indices(8, 8), Indices(0, 8), MaskKind::kCausal, 16);
  ASSERT_TRUE(before);
  ASSERT_EQ(before->size(), 1u);
  EXPECT_EQ((*before)[0].mask, PieceMask::kFull);
  const auto after = SplitIntoPieces(Indices(8, 8), Indices(16, 8), MaskKind::kCausal, 16);
  ASSERT_TRUE(after);
  EXPECT_TRUE(after->empty());
}

TEST(AttentionPieces, OffsetDiagonalIsABottomRightTriangleThenAFullRectangle) {
  // Queries 4..11 against keys 0..7: c = 4. Query row i sees keys j <= i + 4, so rows 0..3 see
  // 5..8 keys (a triangle of 4 rows over the first 4 + 4 = 8 keys, bottom-right aligned: row 0
  // sees j <= 0 + (8 - 4) = 4), and rows 4..7 see all 8 keys (a full rectangle).
  const auto pieces = SplitIntoPieces(Indices(4, 8), Indices(0, 8), MaskKind::kCausal, 16);
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
  const auto r0 = Concat(Indices(0, 4), Indices(28, 4));
  const auto r1 = Concat(Indices(4, 4), Indices(24, 4));
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
  for (int r = 0; r < 8; ++r)
    keys = Concat(Concat(keys, Indices(4 * r, 4)), Indices(4 * (15 - r), 4));
  const auto q = Concat(Indices(0, 4), Indices(60, 4));
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
  // A window without its width (the MaskKind overload: width 0) or of width 0 is no mask; with
  // a width it splits (the Window* tests below).
  EXPECT_FALSE(SplitIntoPieces(Indices(0, 8), Indices(0, 8), MaskKind::kWindow, 16));
  EXPECT_FALSE(SplitIntoPieces(Indices(0, 8), Indices(0, 8), Window(0), 16));
  EXPECT_TRUE(SplitIntoPieces(Indices(0, 8), Indices(0, 8), Window(3), 16));
  // Documents without their starts (the MaskKind overload has none) are no mask either; with
  // them they split (the Documents* tests below).
  EXPECT_FALSE(
      SplitIntoPieces(Indices(0, 8), Indices(0, 8), MaskKind::kDocuments, 16));  // documents
  EXPECT_FALSE(SplitIntoPieces(Indices(0, 8), Indices(0, 8), MaskKind::kDocumentsFull, 16));
  EXPECT_FALSE(SplitIntoPieces(Indices(0, 8), Indices(0, 8), MaskKind::kPrefix, 16));
  // Windows on positions that are neither few runs nor one progression stay on the own kernels,
  // as causal ones do.
  EXPECT_FALSE(SplitIntoPieces(Stripe(0, 4, 32), Stripe(0, 8, 32), Window(16), 16));
  EXPECT_FALSE(SplitIntoPieces(uneven, uneven, Window(16), 16));
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

// `runs` runs of consecutive positions (lengths 1 to max_len) at random offsets and gaps: a
// random block side for the exact-cover sweeps below (the draws in a fixed order, so a seed
// gives one layout).
std::vector<int64_t> RandomRuns(std::mt19937_64& gen, int runs, int64_t max_len) {
  std::vector<int64_t> v;
  int64_t next = static_cast<int64_t>(gen() % 8);
  for (int r = 0; r < runs; ++r) {
    const int64_t len = 1 + static_cast<int64_t>(gen() % static_cast<uint64_t>(max_len));
    v = Concat(v, Indices(next, len));
    next += len + 1 + static_cast<int64_t>(gen() % 12);
  }
  return v;
}

TEST(AttentionPieces, RandomRunLayoutsAreCoveredExactly) {
  std::mt19937_64 gen(11);
  for (int trial = 0; trial < 300; ++trial) {
    // Up to 3 runs per side at random offsets and lengths (overlapping Q and K tokens included).
    auto side = [&](int runs) { return RandomRuns(gen, runs, 9); };
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

// ---- Sliding windows: query position q sees key position k iff q - W < k <= q ----

// The only piece of a split, checked against its expected rows, keys and mask.
void ExpectOnePiece(const std::optional<std::vector<AttentionPiece>>& pieces, AttentionPiece want) {
  ASSERT_TRUE(pieces);
  ASSERT_EQ(pieces->size(), 1u);
  const AttentionPiece& p = pieces->front();
  EXPECT_EQ(p.mask, want.mask);
  EXPECT_EQ(p.q_row0, want.q_row0);
  EXPECT_EQ(p.q_rows, want.q_rows);
  EXPECT_EQ(p.k_row0, want.k_row0);
  EXPECT_EQ(p.k_rows, want.k_rows);
  EXPECT_EQ(p.band_offset, want.band_offset);
  EXPECT_EQ(p.band_width, want.band_width);
}

// Splits (q, k) under `mask` into at most 16 pieces: one piece, `want`, covering exactly the
// visible pairs.
void ExpectSplitIsOnePiece(const std::vector<int64_t>& q, const std::vector<int64_t>& k,
                           const MaskParams& mask, AttentionPiece want) {
  const auto pieces = SplitIntoPieces(q, k, mask, 16);
  ExpectOnePiece(pieces, want);
  if (pieces) ExpectExactCover(q, k, mask, *pieces);
}

TEST(AttentionPieces, WindowOnTheDiagonalBlock) {
  // Q and K both hold tokens 8..15: query row i sees key rows i - W < j <= i.
  // W = 3, smaller than the block: row 7 no longer sees key 0 (7 - 3 >= 0), so the window's
  // lower edge cuts the block: one band, offset 0 (the diagonal), width 3.
  ExpectSplitIsOnePiece(Indices(8, 8), Indices(8, 8), Window(3),
                        {0, 8, 0, 8, PieceMask::kBand, 0, 3});
  // W = 1: the diagonal alone, a band of width 1.
  ExpectSplitIsOnePiece(Indices(8, 8), Indices(8, 8), Window(1),
                        {0, 8, 0, 8, PieceMask::kBand, 0, 1});
  // W = 8, the block: row 7 sees keys 7 - 8 < j, all of them, so the window cuts nothing and the
  // block is the causal diagonal block, one top-left triangle; W = 20 the same.
  for (int64_t w : {8, 20}) {
    ExpectSplitIsOnePiece(Indices(8, 8), Indices(8, 8), Window(w),
                          {0, 8, 0, 8, PieceMask::kCausalTopLeft, 0, 0});
  }
}

TEST(AttentionPieces, WindowOnTheBlockBeforeTheDiagonal) {
  // Queries 8..15 against keys 0..7 (c = 8): query 8 + i sees keys 8 + i - W < k <= 8 + i.
  // W = 3: query 8 sees keys 6, 7 and query 9 key 7; queries 10..15 see nothing. The visible
  // rows 0..1 and keys 6..7 are one band: row i sees j (from key 6) iff i + 2 - 3 < j <= i + 2,
  // offset 8 - 6 = 2 = W - 1, width 3 (an upper triangle).
  ExpectSplitIsOnePiece(Indices(8, 8), Indices(0, 8), Window(3),
                        {0, 2, 6, 2, PieceMask::kBand, 2, 3});
  // W = 8, the block: query 8 + i sees keys i + 1..7, rows 0..6 and keys 1..7, offset 7.
  ExpectSplitIsOnePiece(Indices(8, 8), Indices(0, 8), Window(8),
                        {0, 7, 1, 7, PieceMask::kBand, 7, 8});
  // W = 12: query 8 + i sees keys k > i - 4: rows 0..3 see all 8 keys, rows 4..7 lose keys
  // 0..3 one by one. Every row and key is visible, so one band over the block with offset 8
  // (key row j = 8 + i is the diagonal) and width 12.
  ExpectSplitIsOnePiece(Indices(8, 8), Indices(0, 8), Window(12),
                        {0, 8, 0, 8, PieceMask::kBand, 8, 12});
  // W = 16: query 15 sees key 0 (15 - 16 < 0): every pair, one full rectangle.
  const auto all = SplitIntoPieces(Indices(8, 8), Indices(0, 8), Window(16), 16);
  ExpectOnePiece(all, {0, 8, 0, 8, PieceMask::kFull, 0, 0});
}

TEST(AttentionPieces, WindowBlocksWithNothingVisibleAreEmpty) {
  // Keys 0..7 against queries 16..23 with W = 8: the nearest pair is 16 - 7 = 9 >= 8 apart.
  const auto far = SplitIntoPieces(Indices(16, 8), Indices(0, 8), Window(8), 16);
  ASSERT_TRUE(far);
  EXPECT_TRUE(far->empty());
  // Keys after the queries: nothing, whatever the width.
  const auto after = SplitIntoPieces(Indices(0, 8), Indices(8, 8), Window(100), 16);
  ASSERT_TRUE(after);
  EXPECT_TRUE(after->empty());
  // W = 1 off the diagonal: a query sees only its own token.
  const auto off = SplitIntoPieces(Indices(8, 8), Indices(0, 8), Window(1), 16);
  ASSERT_TRUE(off);
  EXPECT_TRUE(off->empty());
}

TEST(AttentionPieces, WindowWithMoreQueriesThanKeysSplitsAtTheFirstKey) {
  // Queries 0..15 against keys 0..3, W = 6: query i sees keys i - 6 < k <= min(i, 3); queries
  // 0..8 see something (8 - 6 < 3). Nine rows over four keys is too many for one band, so:
  // rows 0..5 still see key 0 (i - 6 < 0): the causal pieces, a top-left triangle over rows and
  // keys 0..3 and a full rectangle for rows 4..5; rows 6..8 see keys from i - 5: one band over
  // keys 1..3 with offset 6 - 1 = 5 and width 6. Three pieces.
  const auto pieces = SplitIntoPieces(Indices(0, 16), Indices(0, 4), Window(6), 16);
  ASSERT_TRUE(pieces);
  ASSERT_EQ(pieces->size(), 3u);
  EXPECT_EQ((*pieces)[0].mask, PieceMask::kCausalTopLeft);
  EXPECT_EQ((*pieces)[0].q_rows, 4);
  EXPECT_EQ((*pieces)[1].mask, PieceMask::kFull);
  EXPECT_EQ((*pieces)[1].q_row0, 4);
  EXPECT_EQ((*pieces)[1].q_rows, 2);
  EXPECT_EQ((*pieces)[2].mask, PieceMask::kBand);
  EXPECT_EQ((*pieces)[2].q_row0, 6);
  EXPECT_EQ((*pieces)[2].q_rows, 3);
  EXPECT_EQ((*pieces)[2].k_row0, 1);
  EXPECT_EQ((*pieces)[2].k_rows, 3);
  EXPECT_EQ((*pieces)[2].band_offset, 5);
  EXPECT_EQ((*pieces)[2].band_width, 6);
  ExpectExactCover(Indices(0, 16), Indices(0, 4), Window(6), *pieces);
}

TEST(AttentionPieces, WindowOnZigzagShards) {
  // 4 ranks, 8 chunks of 8 tokens: rank 1 holds chunks 1 (8..15) and 6 (48..55), rank 0 chunks 0
  // (0..7) and 7 (56..63).
  const auto r0 = Concat(Indices(0, 8), Indices(56, 8));
  const auto r1 = Concat(Indices(8, 8), Indices(48, 8));
  // Rank 1 against itself, W = 6: chunk 1 and chunk 6 each see themselves (a band of width 6 on
  // the diagonal); chunk 6 against chunk 1 is 33 or more apart, chunk 1 against chunk 6 is
  // after it: 2 pieces.
  const auto own = SplitIntoPieces(r1, r1, Window(6), 16);
  ASSERT_TRUE(own);
  ASSERT_EQ(own->size(), 2u);
  EXPECT_EQ((*own)[0].mask, PieceMask::kBand);
  EXPECT_EQ((*own)[1].mask, PieceMask::kBand);
  EXPECT_EQ((*own)[1].q_row0, 8);
  EXPECT_EQ((*own)[1].k_row0, 8);
  ExpectExactCover(r1, r1, Window(6), *own);
  // W = 20 is wider than a chunk: each diagonal chunk is a top-left triangle, and chunk 6 is
  // still 33 or more past chunk 1: 2 triangles.
  const auto wide = SplitIntoPieces(r1, r1, Window(20), 16);
  ASSERT_TRUE(wide);
  ASSERT_EQ(wide->size(), 2u);
  EXPECT_EQ((*wide)[0].mask, PieceMask::kCausalTopLeft);
  EXPECT_EQ((*wide)[1].mask, PieceMask::kCausalTopLeft);
  ExpectExactCover(r1, r1, Window(20), *wide);
  // Rank 1's queries against rank 0's keys, W = 6: chunk 1 sees the end of chunk 0 (queries
  // 8..12 see keys from 3..7 on: rows 0..4, keys 3..7, offset 5 = W - 1); chunk 6 sees chunk 7
  // after it (nothing) and chunk 0 too far back: 1 piece.
  ExpectSplitIsOnePiece(r1, r0, Window(6), {0, 5, 3, 5, PieceMask::kBand, 5, 6});
  // Rank 0's queries against rank 1's keys, W = 8: chunk 7 (56..63) sees chunk 6 (48..55): the
  // band of queries 56..62 over keys 49..55 (rows 8..14, key rows 9..15, offset 7 = W - 1).
  ExpectSplitIsOnePiece(r0, r1, Window(8), {8, 7, 9, 7, PieceMask::kBand, 7, 8});
}

TEST(AttentionPieces, WindowOnStripedBlocks) {
  // 4 stripes, 32 rows each; rank 1 holds 1 + 4i. W = 8 against rank 0 (keys 4j): q - k =
  // 1 + 4(i - j) lies in [0, 8) iff i - j is 0 or 1: row indices i - 2 < j <= i, one band of
  // width floor(1/4) - floor((1 - 8)/4) = 0 - (-2) = 2 on the diagonal.
  ExpectSplitIsOnePiece(Stripe(1, 4, 32), Stripe(0, 4, 32), Window(8),
                        {0, 32, 0, 32, PieceMask::kBand, 0, 2});
  // Against rank 2 (keys 2 + 4j): q - k = 4(i - j) - 1 in [0, 8) iff i - j is 1 or 2: c =
  // floor(-1/4) = -1, width -1 - floor(-9/4) = 2. Row 0 sees nothing, rows 1..31 see keys
  // i - 2 and i - 1: one band from row 1 over keys 0..30, offset 0.
  ExpectSplitIsOnePiece(Stripe(1, 4, 32), Stripe(2, 4, 32), Window(8),
                        {1, 31, 0, 31, PieceMask::kBand, 0, 2});
  // W = 1 between different stripes: no token meets itself, nothing is visible.
  const auto none = SplitIntoPieces(Stripe(1, 4, 32), Stripe(0, 4, 32), Window(1), 16);
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
  // W = 1 on a rank's own stripe: the diagonal, a band of width 1.
  const auto self = SplitIntoPieces(Stripe(1, 4, 32), Stripe(1, 4, 32), Window(1), 16);
  ExpectOnePiece(self, {0, 32, 0, 32, PieceMask::kBand, 0, 1});
}

// Every (query shard, key shard) block of a sequence in `shards` shards of `layout`, for windows
// of many widths, is covered exactly within `max_pieces` pieces per block.
enum class PieceLayout { kContiguous, kZigzag, kStriped };
std::vector<int64_t> Shard(PieceLayout layout, int64_t seq, int64_t shards, int64_t r) {
  const int64_t rows = seq / shards;
  if (layout == PieceLayout::kContiguous) return Indices(r * rows, rows);
  if (layout == PieceLayout::kStriped) return Stripe(r, shards, rows);
  const int64_t chunk = rows / 2;
  return Concat(Indices(r * chunk, chunk), Indices((2 * shards - 1 - r) * chunk, chunk));
}

void ExpectEveryBlockCovered(PieceLayout layout, int64_t seq, int64_t shards, size_t max_pieces) {
  for (int64_t w : {1, 2, 7, 15, 16, 17, 31, 32, 33, 48, 100, 1000}) {
    for (int64_t qr = 0; qr < shards; ++qr) {
      for (int64_t kr = 0; kr < shards; ++kr) {
        const auto q = Shard(layout, seq, shards, qr), k = Shard(layout, seq, shards, kr);
        const auto pieces = SplitIntoPieces(q, k, Window(w), 16);
        ASSERT_TRUE(pieces) << "W " << w << " shards " << qr << ", " << kr;
        EXPECT_LE(pieces->size(), max_pieces) << "W " << w << " shards " << qr << ", " << kr;
        ExpectExactCover(q, k, Window(w), *pieces);
        if (::testing::Test::HasFailure()) return;
      }
    }
  }
}

TEST(AttentionPieces, WindowBlocksOfEveryLayoutAreCoveredExactly) {
  // 128 tokens in 4 shards of 32 (zigzag: chunks of 16; striped: step 4), window widths below,
  // at and above a chunk and a shard. Contiguous: one run pair of equal sizes, whose visible rows
  // and keys are as many (a square), so one band or the causal pieces: at most 2. Zigzag: 2 x 2
  // run pairs of at most 2 pieces each. Striped: one progression, at most 2 as contiguous.
  ExpectEveryBlockCovered(PieceLayout::kContiguous, 128, 4, 2);
  ExpectEveryBlockCovered(PieceLayout::kZigzag, 128, 4, 8);
  ExpectEveryBlockCovered(PieceLayout::kStriped, 128, 4, 2);
  // 8 striped shards of 16 rows go past the 16-run limit only with longer shards: 512 tokens.
  ExpectEveryBlockCovered(PieceLayout::kStriped, 512, 8, 2);
}

TEST(AttentionPieces, GatheredZigzagKeysUnderAWindowNeedFewPieces) {
  // All-gather of 8 zigzag shards of 16 chunks (4 tokens each), as GatheredZigzagKeysNeedFewPieces;
  // rank 0's queries c0 (0..3) and c15 (60..63). W = 6: c0 sees itself (W > 4: a top-left
  // triangle). c15 sees itself (a triangle), c14 (56..59: query 60 + i sees keys past 54 + i, a
  // band of offset 4 and width 6 over the 4 x 4 pair) and the last token of c13 (55, seen by
  // query 60 alone: a 1 x 1 full piece): 4 pieces.
  std::vector<int64_t> keys;
  for (int r = 0; r < 8; ++r)
    keys = Concat(Concat(keys, Indices(4 * r, 4)), Indices(4 * (15 - r), 4));
  const auto q = Concat(Indices(0, 4), Indices(60, 4));
  const auto pieces = SplitIntoPieces(q, keys, Window(6), 16);
  ASSERT_TRUE(pieces);
  EXPECT_EQ(pieces->size(), 4u);
  ExpectExactCover(q, keys, Window(6), *pieces);
  for (int64_t w : {1, 3, 4, 5, 9, 30, 64}) {
    const auto any = SplitIntoPieces(q, keys, Window(w), 16);
    ASSERT_TRUE(any) << "W " << w;
    ExpectExactCover(q, keys, Window(w), *any);
  }
}

// Runs of consecutive positions.
size_t RunCount(const std::vector<int64_t>& pos) {
  size_t runs = 0;
  for (size_t i = 0; i < pos.size(); ++i) runs += i == 0 || pos[i] != pos[i - 1] + 1;
  return runs;
}

TEST(AttentionPieces, RandomWindowRunLayoutsAreCoveredExactly) {
  std::mt19937_64 gen(29);
  for (int trial = 0; trial < 400; ++trial) {
    // Up to 3 runs per side at random offsets and lengths (overlapping Q and K tokens included),
    // as RandomRunLayoutsAreCoveredExactly, and a random width from 1 to past the layout.
    auto side = [&](int runs) { return RandomRuns(gen, runs, 12); };
    const auto q = side(1 + static_cast<int>(gen() % 3));
    const auto k = side(1 + static_cast<int>(gen() % 3));
    const int64_t w = 1 + static_cast<int64_t>(gen() % 40);
    const auto pieces = SplitIntoPieces(q, k, Window(w), 64);
    ASSERT_TRUE(pieces) << "W " << w;
    // At most 3 pieces per run pair.
    EXPECT_LE(pieces->size(), 3 * RunCount(q) * RunCount(k));
    ExpectExactCover(q, k, Window(w), *pieces);
    if (HasFatalFailure()) return;
  }
}

TEST(AttentionPieces, RandomWindowStripedBlocksAreCoveredExactly) {
  std::mt19937_64 gen(31);
  for (int trial = 0; trial < 300; ++trial) {
    const int64_t stripes = 2 + static_cast<int64_t>(gen() % 7);
    const int64_t rows = 1 + static_cast<int64_t>(gen() % 40);
    const int64_t qi = static_cast<int64_t>(gen() % stripes),
                  kj = static_cast<int64_t>(gen() % stripes);
    const int64_t shift = stripes * (static_cast<int64_t>(gen() % 5) - 2);
    const auto q = Stripe(qi, stripes, rows);
    const auto k = Stripe(kj + shift, stripes, 1 + static_cast<int64_t>(gen() % 40));
    const int64_t w = 1 + static_cast<int64_t>(gen() % (4 * stripes + 40));
    // max_pieces 3: a side of more than 3 rows is more than 3 runs (every row its own run), so
    // the progression's split is taken, at most 3 pieces; on at most 3 query rows each row's
    // keys are adjacent rows, whose full pieces merge: at most one piece per query row.
    const auto pieces = SplitIntoPieces(q, k, Window(w), 3);
    ASSERT_TRUE(pieces) << "stripes " << stripes << " rows " << rows << " W " << w;
    ExpectExactCover(q, k, Window(w), *pieces);
    if (HasFatalFailure()) return;
  }
}

// ---- Documents: causal (docs) or bidirectional (docs-full) within each document ----

MaskParams Docs(bool bidirectional) {
  return Kind(bidirectional ? MaskKind::kDocumentsFull : MaskKind::kDocuments);
}

std::optional<std::vector<AttentionPiece>> SplitDocs(const std::vector<int64_t>& q,
                                                     const std::vector<int64_t>& k,
                                                     bool bidirectional,
                                                     const std::vector<int64_t>& doc_starts,
                                                     int32_t max_pieces = 16) {
  return SplitIntoPieces(q, k, Docs(bidirectional), doc_starts, max_pieces);
}

// The pieces of a split, checked against the expected rows, keys and masks in order.
void ExpectPieces(const std::optional<std::vector<AttentionPiece>>& pieces,
                  const std::vector<AttentionPiece>& want) {
  ASSERT_TRUE(pieces);
  ASSERT_EQ(pieces->size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const AttentionPiece &p = (*pieces)[i], &w = want[i];
    EXPECT_EQ(p.mask, w.mask) << "piece " << i;
    EXPECT_EQ(p.q_row0, w.q_row0) << "piece " << i;
    EXPECT_EQ(p.q_rows, w.q_rows) << "piece " << i;
    EXPECT_EQ(p.k_row0, w.k_row0) << "piece " << i;
    EXPECT_EQ(p.k_rows, w.k_rows) << "piece " << i;
  }
}

TEST(AttentionPieces, OneDocumentIsTheCausalOrTheFullSplit) {
  const std::vector<int64_t> one{0};
  // Tokens 8..15 against themselves: docs is the causal diagonal block (one top-left triangle),
  // docs-full every pair (one full rectangle).
  const auto diag = SplitDocs(Indices(8, 8), Indices(8, 8), false, one);
  ExpectPieces(diag, {{0, 8, 0, 8, PieceMask::kCausalTopLeft}});
  ExpectExactCover(Indices(8, 8), Indices(8, 8), Docs(false), one, *diag);
  const auto diag_full = SplitDocs(Indices(8, 8), Indices(8, 8), true, one);
  ExpectPieces(diag_full, {{0, 8, 0, 8, PieceMask::kFull}});
  ExpectExactCover(Indices(8, 8), Indices(8, 8), Docs(true), one, *diag_full);
  // Queries 4..11 against keys 0..7 (c = 4): docs as causal, a bottom-right triangle of rows 0..3
  // over the 8 keys and a full rectangle of rows 4..7: 2 pieces; docs-full one rectangle.
  const auto offset = SplitDocs(Indices(4, 8), Indices(0, 8), false, one);
  ExpectPieces(offset,
               {{0, 4, 0, 8, PieceMask::kCausalBottomRight}, {4, 4, 0, 8, PieceMask::kFull}});
  ExpectExactCover(Indices(4, 8), Indices(0, 8), Docs(false), one, *offset);
  // Keys 8..15 after queries 0..7: docs sees nothing, docs-full every pair (bidirectional).
  const auto after = SplitDocs(Indices(0, 8), Indices(8, 8), false, one);
  ASSERT_TRUE(after);
  EXPECT_TRUE(after->empty());
  const auto after_full = SplitDocs(Indices(0, 8), Indices(8, 8), true, one);
  ExpectPieces(after_full, {{0, 8, 0, 8, PieceMask::kFull}});
  ExpectExactCover(Indices(0, 8), Indices(8, 8), Docs(true), one, *after_full);
}

TEST(AttentionPieces, ADocumentBoundaryInsideADiagonalBlockCutsIt) {
  // Tokens 0..15 against themselves, documents from 0 and 6: rows and keys 0..5 are document 0,
  // 6..15 document 1. docs: a top-left triangle per document (6 x 6, then 10 x 10); docs-full a
  // full square per document. Across the boundary nothing: 2 pieces each.
  const std::vector<int64_t> starts{0, 6};
  const auto docs = SplitDocs(Indices(0, 16), Indices(0, 16), false, starts);
  ExpectPieces(
      docs, {{0, 6, 0, 6, PieceMask::kCausalTopLeft}, {6, 10, 6, 10, PieceMask::kCausalTopLeft}});
  ExpectExactCover(Indices(0, 16), Indices(0, 16), Docs(false), starts, *docs);
  const auto full = SplitDocs(Indices(0, 16), Indices(0, 16), true, starts);
  ExpectPieces(full, {{0, 6, 0, 6, PieceMask::kFull}, {6, 10, 6, 10, PieceMask::kFull}});
  ExpectExactCover(Indices(0, 16), Indices(0, 16), Docs(true), starts, *full);
}

TEST(AttentionPieces, ADocumentBoundaryInsideAnOffDiagonalBlockCutsIt) {
  // Queries 16..31 against keys 0..15, documents from 0, 10 and 20: queries 16..19 (rows 0..3)
  // share document 1 with keys 10..15 (rows 10..15), all before them: one full 4 x 6 rectangle,
  // under either kind; queries 20..31 are document 2, which holds no key.
  const std::vector<int64_t> starts{0, 10, 20};
  for (bool bidirectional : {false, true}) {
    const auto pieces = SplitDocs(Indices(16, 16), Indices(0, 16), bidirectional, starts);
    ExpectPieces(pieces, {{0, 4, 10, 6, PieceMask::kFull}});
    ExpectExactCover(Indices(16, 16), Indices(0, 16), Docs(bidirectional), starts, *pieces);
  }
  // Queries 8..15 against keys 0..15, documents from 0 and 10. Document 0: queries 8, 9 (rows 0,
  // 1) against keys 0..9 (c = 8): docs, row i sees keys j <= i + 8, a bottom-right triangle of 2
  // rows over the 10 keys. Document 1: queries 10..15 (rows 2..7) against keys 10..15 (rows
  // 10..15), c = 0: a top-left triangle. docs-full: the same rows and keys as full rectangles.
  const std::vector<int64_t> two{0, 10};
  const auto docs = SplitDocs(Indices(8, 8), Indices(0, 16), false, two);
  ExpectPieces(docs, {{0, 2, 0, 10, PieceMask::kCausalBottomRight},
                      {2, 6, 10, 6, PieceMask::kCausalTopLeft}});
  ExpectExactCover(Indices(8, 8), Indices(0, 16), Docs(false), two, *docs);
  const auto full = SplitDocs(Indices(8, 8), Indices(0, 16), true, two);
  ExpectPieces(full, {{0, 2, 0, 10, PieceMask::kFull}, {2, 6, 10, 6, PieceMask::kFull}});
  ExpectExactCover(Indices(8, 8), Indices(0, 16), Docs(true), two, *full);
}

TEST(AttentionPieces, ManyShortDocumentsAreAPieceEachUpToMaxPieces) {
  // Tokens 0..15 against themselves in 8 documents of 2 tokens: a 2 x 2 top-left triangle (docs)
  // or full square (docs-full) per document, 8 pieces: within max_pieces 8, refused under 7 (the
  // own kernels' block then).
  std::vector<int64_t> starts;
  for (int64_t t = 0; t < 16; t += 2) starts.push_back(t);
  for (bool bidirectional : {false, true}) {
    const auto fits = SplitDocs(Indices(0, 16), Indices(0, 16), bidirectional, starts, 8);
    ASSERT_TRUE(fits);
    ASSERT_EQ(fits->size(), 8u);
    for (int64_t d = 0; d < 8; ++d) {
      const AttentionPiece& p = (*fits)[static_cast<size_t>(d)];
      EXPECT_EQ(p.mask, bidirectional ? PieceMask::kFull : PieceMask::kCausalTopLeft);
      EXPECT_EQ(p.q_row0, 2 * d);
      EXPECT_EQ(p.k_row0, 2 * d);
      EXPECT_EQ(p.q_rows, 2);
      EXPECT_EQ(p.k_rows, 2);
    }
    ExpectExactCover(Indices(0, 16), Indices(0, 16), Docs(bidirectional), starts, *fits);
    EXPECT_FALSE(SplitDocs(Indices(0, 16), Indices(0, 16), bidirectional, starts, 7));
  }
  // Many documents but no shared one: queries 16..31 against keys 0..15, documents of 2 tokens
  // throughout. Nothing is visible, so no piece, even under max_pieces 1.
  std::vector<int64_t> more;
  for (int64_t t = 0; t < 32; t += 2) more.push_back(t);
  for (bool bidirectional : {false, true}) {
    const auto none = SplitDocs(Indices(16, 16), Indices(0, 16), bidirectional, more, 1);
    ASSERT_TRUE(none);
    EXPECT_TRUE(none->empty());
  }
}

TEST(AttentionPieces, DocumentsOfOneTokenAreOneByOnePieces) {
  // Tokens 0..7, each its own document: each token sees itself only, a 1 x 1 full piece (a
  // 1 x 1 causal pair is full) per token under either kind: 8 pieces on the diagonal.
  const std::vector<int64_t> each = Indices(0, 8);
  for (bool bidirectional : {false, true}) {
    const auto pieces = SplitDocs(Indices(0, 8), Indices(0, 8), bidirectional, each);
    ASSERT_TRUE(pieces);
    ASSERT_EQ(pieces->size(), 8u);
    for (int64_t t = 0; t < 8; ++t) {
      const AttentionPiece& p = (*pieces)[static_cast<size_t>(t)];
      EXPECT_EQ(p.mask, PieceMask::kFull);
      EXPECT_EQ(p.q_row0, t);
      EXPECT_EQ(p.k_row0, t);
      EXPECT_EQ(p.q_rows, 1);
      EXPECT_EQ(p.k_rows, 1);
    }
    ExpectExactCover(Indices(0, 8), Indices(0, 8), Docs(bidirectional), each, *pieces);
  }
  // Documents from 0, 1, 2 and 5 on tokens 0..7: tokens 0 and 1 alone (1 x 1 full), then 2..4
  // and 5..7 (a 3 x 3 triangle or square each): 4 pieces.
  const std::vector<int64_t> mixed{0, 1, 2, 5};
  const auto docs = SplitDocs(Indices(0, 8), Indices(0, 8), false, mixed);
  ExpectPieces(docs, {{0, 1, 0, 1, PieceMask::kFull},
                      {1, 1, 1, 1, PieceMask::kFull},
                      {2, 3, 2, 3, PieceMask::kCausalTopLeft},
                      {5, 3, 5, 3, PieceMask::kCausalTopLeft}});
  ExpectExactCover(Indices(0, 8), Indices(0, 8), Docs(false), mixed, *docs);
}

TEST(AttentionPieces, ADocumentLongerThanABlock) {
  // Documents from 0 and 100. Queries 32..47 against keys 16..31 lie in document 0 (c = 16 >= 15:
  // every key before every query): one full rectangle under either kind.
  const std::vector<int64_t> starts{0, 100};
  for (bool bidirectional : {false, true}) {
    const auto inside = SplitDocs(Indices(32, 16), Indices(16, 16), bidirectional, starts);
    ExpectPieces(inside, {{0, 16, 0, 16, PieceMask::kFull}});
  }
  // Tokens 96..103 against themselves: the end of document 0 (rows 0..3) and the start of
  // document 1 (rows 4..7), a 4 x 4 triangle (docs) or square (docs-full) each: 2 pieces.
  const auto docs = SplitDocs(Indices(96, 8), Indices(96, 8), false, starts);
  ExpectPieces(docs,
               {{0, 4, 0, 4, PieceMask::kCausalTopLeft}, {4, 4, 4, 4, PieceMask::kCausalTopLeft}});
  ExpectExactCover(Indices(96, 8), Indices(96, 8), Docs(false), starts, *docs);
  const auto full = SplitDocs(Indices(96, 8), Indices(96, 8), true, starts);
  ExpectPieces(full, {{0, 4, 0, 4, PieceMask::kFull}, {4, 4, 4, 4, PieceMask::kFull}});
}

TEST(AttentionPieces, DocumentsOnZigzagShards) {
  // 4 ranks, 8 chunks of 8 tokens: rank 1 holds chunks 1 (8..15, rows 0..7) and 6 (48..55, rows
  // 8..15). Documents from 0, 12 and 52: rows 0..3 are document 0, rows 4..11 document 1
  // (tokens 12..15 and 48..51), rows 12..15 document 2. Rank 1 against itself, docs:
  // document 0, a 4 x 4 top-left triangle; document 1, tokens 12..15 against 12..15 a triangle
  // and against 48..51 nothing (later), tokens 48..51 against 12..15 full and against 48..51 a
  // triangle; document 2, a triangle: 5 pieces.
  const auto r1 = Concat(Indices(8, 8), Indices(48, 8));
  const std::vector<int64_t> starts{0, 12, 52};
  const auto docs = SplitDocs(r1, r1, false, starts);
  ExpectPieces(docs, {{0, 4, 0, 4, PieceMask::kCausalTopLeft},
                      {4, 4, 4, 4, PieceMask::kCausalTopLeft},
                      {8, 4, 4, 4, PieceMask::kFull},
                      {8, 4, 8, 4, PieceMask::kCausalTopLeft},
                      {12, 4, 12, 4, PieceMask::kCausalTopLeft}});
  ExpectExactCover(r1, r1, Docs(false), starts, *docs);
  // docs-full: document 1's rows 4..11 see key rows 4..11, adjacent rows, so each of its two
  // query runs is one 4 x 8 rectangle (the 4 x 4 pieces merge): 4 pieces.
  const auto full = SplitDocs(r1, r1, true, starts);
  ExpectPieces(full, {{0, 4, 0, 4, PieceMask::kFull},
                      {4, 4, 4, 8, PieceMask::kFull},
                      {8, 4, 4, 8, PieceMask::kFull},
                      {12, 4, 12, 4, PieceMask::kFull}});
  ExpectExactCover(r1, r1, Docs(true), starts, *full);
}

TEST(AttentionPieces, StripedDocumentBlocksCutTheProgression) {
  // 4 stripes of 32 rows (128 tokens), documents from 0 and 64: rank 1's queries 1 + 4i against
  // rank 0's keys 4j. Rows 0..15 (tokens 1..61) and key rows 0..15 (0..60) are document 0, the
  // rest document 1; in each, key j (from the document's first row) is visible to query i iff
  // 4j <= 1 + 4i, j <= i: a 16 x 16 top-left triangle per document, 2 pieces (more than 16
  // runs: the progression's split, cut at 64).
  const std::vector<int64_t> starts{0, 64};
  const auto q = Stripe(1, 4, 32), k = Stripe(0, 4, 32);
  const auto docs = SplitDocs(q, k, false, starts);
  ExpectPieces(docs, {{0, 16, 0, 16, PieceMask::kCausalTopLeft},
                      {16, 16, 16, 16, PieceMask::kCausalTopLeft}});
  ExpectExactCover(q, k, Docs(false), starts, *docs);
  // docs-full: a 16 x 16 square per document.
  const auto full = SplitDocs(q, k, true, starts);
  ExpectPieces(full, {{0, 16, 0, 16, PieceMask::kFull}, {16, 16, 16, 16, PieceMask::kFull}});
  ExpectExactCover(q, k, Docs(true), starts, *full);
}

TEST(AttentionPieces, DocumentBlocksThatAreNotExpressible) {
  // No starts, starts not from 0, a position before the first start: nullopt.
  EXPECT_FALSE(SplitDocs(Indices(0, 8), Indices(0, 8), false, {}));
  EXPECT_FALSE(SplitDocs(Indices(0, 8), Indices(0, 8), true, {}));
  EXPECT_FALSE(SplitDocs(Indices(8, 8), Indices(8, 8), false, {4, 12}));
  EXPECT_FALSE(SplitDocs(Indices(-2, 8), Indices(0, 8), true, {0}));
  // The MaskParams overload has no starts: documents are refused there, as before.
  EXPECT_FALSE(SplitIntoPieces(Indices(0, 8), Indices(0, 8), Docs(false), 16));
  // Positions that are neither at most max_pieces runs nor one progression of a common step.
  EXPECT_FALSE(SplitDocs(Stripe(0, 4, 32), Stripe(0, 8, 32), false, {0}));
  EXPECT_FALSE(SplitDocs(Stripe(0, 4, 32), Stripe(0, 8, 32), true, {0}));
  // A prefix mask is still no split, document starts or not.
  EXPECT_FALSE(SplitIntoPieces(Indices(0, 8), Indices(0, 8), Kind(MaskKind::kPrefix),
                               std::vector<int64_t>{0}, 16));
}

// Every (query shard, key shard) block of `seq` tokens in `shards` shards of `layout`, and (but
// for striped shards, whose gathered keys are neither few runs nor one progression) every query
// shard against all keys gathered in rank order, under both document kinds with documents from
// `starts`: covered exactly with no piece limit, and within 16 pieces (cuDNN's limit,
// executor/cuda/cudnn_attention.cc) exactly too, always there when `all_fit` (else the split may
// refuse a block).
void ExpectDocumentBlocksCovered(PieceLayout layout, int64_t seq, int64_t shards,
                                 const std::vector<int64_t>& starts, bool all_fit) {
  std::vector<int64_t> gathered;
  for (int64_t r = 0; r < shards; ++r) gathered = Concat(gathered, Shard(layout, seq, shards, r));
  const int64_t key_sets = layout == PieceLayout::kStriped ? shards : shards + 1;
  for (bool bidirectional : {false, true}) {
    for (int64_t qr = 0; qr < shards; ++qr) {
      for (int64_t kr = 0; kr < key_sets; ++kr) {  // kr == shards: the gathered keys
        const auto q = Shard(layout, seq, shards, qr);
        const auto k = kr < shards ? Shard(layout, seq, shards, kr) : gathered;
        const std::string at = std::string(bidirectional ? "docs-full" : "docs") + " shards " +
                               std::to_string(qr) + ", " + std::to_string(kr);
        const auto any = SplitDocs(q, k, bidirectional, starts, 1 << 20);
        ASSERT_TRUE(any) << at;
        ExpectExactCover(q, k, Docs(bidirectional), starts, *any);
        const auto within = SplitDocs(q, k, bidirectional, starts, 16);
        if (all_fit) {
          EXPECT_TRUE(within) << at;
        }
        if (within) {
          EXPECT_LE(within->size(), 16u) << at;
          ExpectExactCover(q, k, Docs(bidirectional), starts, *within);
        }
        if (::testing::Test::HasFailure()) return;
      }
    }
  }
}

TEST(AttentionPieces, DocumentBlocksOfEveryLayoutAreCoveredExactly) {
  // 128 tokens in 4 shards of 32 (zigzag: chunks of 16; striped: step 4, 32 runs, more than 16,
  // so the progression's split). Document layouts: one document; boundaries inside blocks; a
  // document longer than a shard; these few documents fit 16 pieces on every block (asserted).
  // Then documents of one token among longer ones, and documents of 3 tokens (a contiguous
  // diagonal block meets 11 of them, a zigzag one about 12): the split may refuse a block there,
  // but never covers one wrongly.
  const std::vector<std::vector<int64_t>> few = {{0}, {0, 5, 37, 40, 100}, {0, 80}};
  const std::vector<int64_t> ones{0, 1, 2, 3, 20, 21, 22, 63, 64, 127};
  std::vector<int64_t> short3;
  for (int64_t t = 0; t < 128; t += 3) short3.push_back(t);
  for (PieceLayout layout :
       {PieceLayout::kContiguous, PieceLayout::kZigzag, PieceLayout::kStriped}) {
    for (const auto& starts : few) {
      ExpectDocumentBlocksCovered(layout, 128, 4, starts, true);
      if (HasFailure()) return;
    }
    ExpectDocumentBlocksCovered(layout, 128, 4, ones, false);
    ExpectDocumentBlocksCovered(layout, 128, 4, short3, false);
    if (HasFailure()) return;
  }
  // The refusal: tokens 0..63 against themselves in documents of 3 tokens meet 22 documents
  // (0..2, ..., 60..62, and 63 alone before 64): 22 triangles or squares, over 16.
  std::vector<int64_t> starts;
  for (int64_t t = 0; t < 66; t += 3) starts.push_back(t);
  for (bool bidirectional : {false, true}) {
    EXPECT_FALSE(SplitDocs(Indices(0, 64), Indices(0, 64), bidirectional, starts, 16));
    const auto all = SplitDocs(Indices(0, 64), Indices(0, 64), bidirectional, starts, 22);
    ASSERT_TRUE(all);
    EXPECT_EQ(all->size(), 22u);
  }
}

TEST(AttentionPieces, RandomDocumentRunLayoutsAreCoveredExactly) {
  std::mt19937_64 gen(37);
  for (int trial = 0; trial < 400; ++trial) {
    // Up to 3 runs per side at random offsets and lengths, as RandomRunLayoutsAreCoveredExactly,
    // and documents of 1 to 12 tokens.
    auto side = [&](int runs) { return RandomRuns(gen, runs, 12); };
    const auto q = side(1 + static_cast<int>(gen() % 3));
    const auto k = side(1 + static_cast<int>(gen() % 3));
    std::vector<int64_t> starts{0};
    while (starts.back() < 80)
      starts.push_back(starts.back() + 1 + static_cast<int64_t>(gen() % 12));
    for (bool bidirectional : {false, true}) {
      const auto pieces = SplitDocs(q, k, bidirectional, starts, 1 << 20);
      ASSERT_TRUE(pieces);
      ExpectExactCover(q, k, Docs(bidirectional), starts, *pieces);
      if (HasFatalFailure()) return;
    }
  }
}

TEST(AttentionPieces, RandomDocumentStripedBlocksAreCoveredExactly) {
  std::mt19937_64 gen(41);
  for (int trial = 0; trial < 300; ++trial) {
    const int64_t stripes = 2 + static_cast<int64_t>(gen() % 7);
    const int64_t qi = static_cast<int64_t>(gen() % stripes),
                  kj = static_cast<int64_t>(gen() % stripes);
    const int64_t shift = stripes * static_cast<int64_t>(gen() % 5);
    const auto q = Stripe(qi, stripes, 1 + static_cast<int64_t>(gen() % 40));
    const auto k = Stripe(kj + shift, stripes, 1 + static_cast<int64_t>(gen() % 40));
    // At most 4 documents. max_pieces 8: a side of more than 8 rows is more than 8 runs, so the
    // progressions' split is taken: one cut run per document and side, at most 4 pairs of at most
    // 2 pieces. On at most 8 rows a side, each query row's keys in its document are adjacent rows
    // whose visible 1 x 1 pieces merge: at most one piece per query row.
    std::vector<int64_t> starts{0};
    const int64_t docs = static_cast<int64_t>(gen() % 4);
    for (int64_t d = 0; d < docs; ++d)
      starts.push_back(starts.back() + 1 + static_cast<int64_t>(gen() % (20 * stripes)));
    for (bool bidirectional : {false, true}) {
      const auto pieces = SplitDocs(q, k, bidirectional, starts, 8);
      ASSERT_TRUE(pieces) << "stripes " << stripes << " docs " << starts.size();
      EXPECT_LE(pieces->size(), 8u);
      ExpectExactCover(q, k, Docs(bidirectional), starts, *pieces);
      if (HasFatalFailure()) return;
    }
  }
}

// ---- Blocks gathered into position order (SplitInPositionOrder) ----

// The whole sequence as a rank holds it after an all-to-all or all-gather: the shards of ranks
// 0..shards-1 of `layout`, concatenated.
std::vector<int64_t> WholeSequence(PieceLayout layout, int64_t seq, int64_t shards) {
  std::vector<int64_t> v;
  for (int64_t r = 0; r < shards; ++r) v = Concat(v, Shard(layout, seq, shards, r));
  return v;
}

// The gathered side: checks that the runs take every row once (sources and destinations each a
// partition of 0..n-1, a run's rows in order) into ascending positions, and returns the
// gathered positions. With ExpectExactCover on the gathered positions this proves that the
// pieces, mapped back through the runs, cover the block as it lies exactly.
std::vector<int64_t> Gathered(const std::vector<int64_t>& pos, const std::vector<RowRun>& runs) {
  const size_t n = pos.size();
  std::vector<int64_t> out(n, -1);
  std::vector<int> src_used(n, 0);
  for (const RowRun& r : runs) {
    EXPECT_GT(r.rows, 0);
    for (int64_t i = 0; i < r.rows; ++i) {
      const size_t s = static_cast<size_t>(r.src_row0 + i), d = static_cast<size_t>(r.dst_row0 + i);
      EXPECT_LT(s, n);
      EXPECT_LT(d, n);
      if (s >= n || d >= n) return {};
      ++src_used[s];
      EXPECT_EQ(out[d], -1) << "destination row " << d << " written twice";
      out[d] = pos[s];
    }
  }
  for (size_t i = 0; i < n; ++i) {
    EXPECT_EQ(src_used[i], 1) << "source row " << i;
    EXPECT_NE(out[i], -1) << "destination row " << i;
    if (i > 0) {
      EXPECT_LE(out[i - 1], out[i]) << "destination row " << i;
    }
  }
  return out;
}

TEST(AttentionPiecesInPositionOrder, AWholeZigzagSequenceIsOneCausalPiece) {
  // 8 zigzag ranks of 2 chunks of 4 tokens: rank r holds chunks r and 15 - r, so the rows lie as
  // chunks 0, 15, 1, 14, ..., 7, 8. As they lie every (chunk, chunk) pair is a run pair: 16 x 17 /
  // 2 = 136 visible pairs of chunks, past any piece limit. Gathered: positions 0..63 in order,
  // one top-left triangle; 15 runs a side (16 chunks, but rank 7's chunks 7 and 8 lie side by
  // side in both orders).
  const auto whole = WholeSequence(PieceLayout::kZigzag, 64, 8);
  EXPECT_FALSE(SplitIntoPieces(whole, whole, MaskKind::kCausal, 16));
  const auto split = SplitInPositionOrder(whole, whole, Kind(MaskKind::kCausal), {}, 16, 64);
  ASSERT_TRUE(split);
  ASSERT_EQ(split->pieces.size(), 1u);
  EXPECT_EQ(split->pieces[0].mask, PieceMask::kCausalTopLeft);
  EXPECT_EQ(split->pieces[0].q_rows, 64);
  ASSERT_EQ(split->q_runs.size(), 15u);
  // Chunk 15 lies at rows 4..7 (rank 0's second chunk) and goes to rows 60..63.
  bool found = false;
  for (const RowRun& r : split->q_runs) found |= r.src_row0 == 4 && r.dst_row0 == 60 && r.rows == 4;
  EXPECT_TRUE(found);
  const auto q = Gathered(whole, split->q_runs), k = Gathered(whole, split->k_runs);
  EXPECT_EQ(q, Indices(0, 64));
  ExpectExactCover(q, k, MaskKind::kCausal, split->pieces);
}

TEST(AttentionPiecesInPositionOrder, RowsInOrderOrPastTheRunLimitStay) {
  // Already in order on both sides: nothing to gather, SplitIntoPieces is the whole answer.
  EXPECT_FALSE(
      SplitInPositionOrder(Indices(0, 32), Indices(0, 32), Kind(MaskKind::kCausal), {}, 16, 64));
  // A side without rows: nothing to gather, even when the other side is out of order.
  const std::vector<int64_t> shuffled{3, 0, 1, 2};
  EXPECT_FALSE(SplitInPositionOrder({}, shuffled, Kind(MaskKind::kCausal), {}, 16, 64));
  EXPECT_FALSE(SplitInPositionOrder(shuffled, {}, Kind(MaskKind::kCausal), {}, 16, 64));
  // 8 striped ranks of 8 rows each (step 8): the sorted order interleaves every rank, one run per
  // row, 64 runs: past a limit of 32, within one of 64.
  const auto striped = WholeSequence(PieceLayout::kStriped, 64, 8);
  EXPECT_FALSE(SplitInPositionOrder(striped, striped, Kind(MaskKind::kCausal), {}, 16, 32));
  const auto ok = SplitInPositionOrder(striped, striped, Kind(MaskKind::kCausal), {}, 16, 64);
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->pieces.size(), 1u);
  EXPECT_EQ(ok->q_runs.size(), 64u);
  // A prefix mask has no pieces in any order.
  EXPECT_FALSE(SplitInPositionOrder(striped, striped, Kind(MaskKind::kPrefix), {}, 16, 64));
}

TEST(AttentionPiecesInPositionOrder, EveryLayoutAndMaskIsCoveredExactly) {
  // Every layout's whole sequence (4 and 8 ranks, 128 tokens) under a causal mask, windows of
  // many widths and 1-5 documents: gathered, the sequence is one run, so causal and a window are
  // at most 2 pieces (the window's causal rows and its band), and documents the causal pieces of
  // each document (one each).
  for (PieceLayout layout :
       {PieceLayout::kContiguous, PieceLayout::kZigzag, PieceLayout::kStriped}) {
    for (int64_t shards : {4, 8}) {
      const auto whole = WholeSequence(layout, 128, shards);
      std::vector<std::pair<MaskParams, std::vector<int64_t>>> masks = {
          {Kind(MaskKind::kCausal), {}}, {Kind(MaskKind::kFull), {}}};
      for (int64_t w : {1, 3, 16, 17, 64, 200}) masks.push_back({Window(w), {}});
      masks.push_back({Docs(false), {0, 5, 40, 41, 100}});
      masks.push_back({Docs(true), {0, 64}});
      for (const auto& [mask, starts] : masks) {
        // 128 runs: a striped sequence sorted takes its rows one by one.
        const auto split = SplitInPositionOrder(whole, whole, mask, starts, 16, 128);
        if (layout == PieceLayout::kContiguous) {
          EXPECT_FALSE(split);  // already in order
          continue;
        }
        ASSERT_TRUE(split) << "layout " << static_cast<int>(layout) << " shards " << shards;
        const size_t most = mask.kind == MaskKind::kWindow ? 2 : starts.empty() ? 1 : starts.size();
        EXPECT_LE(split->pieces.size(), most) << "layout " << static_cast<int>(layout);
        const auto q = Gathered(whole, split->q_runs), k = Gathered(whole, split->k_runs);
        ExpectExactCover(q, k, mask, starts, split->pieces);
        if (HasFatalFailure()) return;
      }
    }
  }
}

TEST(AttentionPiecesInPositionOrder, RandomRunOrdersAreCoveredExactly) {
  // Random runs of consecutive positions (RandomRuns) shuffled as whole runs, Q and K drawn
  // apart, under causal, full, a window and documents: whatever the order, the gathered split
  // covers the block exactly.
  std::mt19937_64 gen(53);
  auto shuffled = [&](int runs) {
    std::vector<std::vector<int64_t>> parts;
    const auto v = RandomRuns(gen, runs, 9);
    for (size_t i = 0; i < v.size();) {
      size_t j = i + 1;
      while (j < v.size() && v[j] == v[j - 1] + 1) ++j;
      parts.emplace_back(v.begin() + static_cast<std::ptrdiff_t>(i),
                         v.begin() + static_cast<std::ptrdiff_t>(j));
      i = j;
    }
    std::shuffle(parts.begin(), parts.end(), gen);
    std::vector<int64_t> out;
    for (const auto& p : parts) out = Concat(out, p);
    return out;
  };
  for (int trial = 0; trial < 200; ++trial) {
    const auto q = shuffled(1 + static_cast<int>(gen() % 6));
    const auto k = shuffled(1 + static_cast<int>(gen() % 6));
    const std::vector<int64_t> starts{0, 1 + static_cast<int64_t>(gen() % 60)};
    for (const auto& [mask, doc_starts] : std::vector<std::pair<MaskParams, std::vector<int64_t>>>{
             {Kind(MaskKind::kCausal), {}},
             {Kind(MaskKind::kFull), {}},
             {Window(1 + static_cast<int64_t>(gen() % 20)), {}},
             {Docs(false), starts}}) {
      const auto split = SplitInPositionOrder(q, k, mask, doc_starts, 64, 64);
      if (!split) continue;  // both sides already in order
      const auto gq = Gathered(q, split->q_runs), gk = Gathered(k, split->k_runs);
      ExpectExactCover(gq, gk, mask, doc_starts, split->pieces);
      if (HasFatalFailure()) return;
    }
  }
}

}  // namespace
}  // namespace meshplan::exec
