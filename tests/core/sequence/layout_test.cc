#include "core/sequence/layout.h"

#include <gtest/gtest.h>

namespace meshplan {
namespace {

// Shard of token t under each layout, written from the definitions in layout.h.
int64_t ShardOf(Layout kind, int64_t seq, int64_t shards, int64_t t) {
  switch (kind) {
    case Layout::kContiguous:
      return t / (seq / shards);
    case Layout::kZigzag: {
      const int64_t chunk = t / (seq / (2 * shards));
      return chunk < shards ? chunk : 2 * shards - 1 - chunk;
    }
    case Layout::kStriped:
      return t % shards;
    case Layout::kBalanced:  // chunks chosen by work: tests/core/sequence/balanced_dispatch_test.cc
    case Layout::kDocZigzag:  // by document: DocShardOf
      break;
  }
  return -1;
}

bool Allowed(const Mask& mask, int64_t q, int64_t k) {
  switch (mask.kind) {
    case MaskKind::kFull:
      return true;
    case MaskKind::kCausal:
      return k <= q;
    case MaskKind::kWindow:
      return q - mask.window < k && k <= q;
    case MaskKind::kDocuments:
    case MaskKind::kDocumentsFull: {
      int64_t start = 0;
      for (int64_t length : mask.document_lengths) {
        if (q < start + length) {
          return start <= k && (mask.kind == MaskKind::kDocuments ? k <= q : k < start + length);
        }
        start += length;
      }
      return false;
    }
    case MaskKind::kPrefix:
      return k < mask.prefix || k <= q;
  }
  return false;
}

int64_t BruteBlockPairs(Layout kind, const Mask& mask, int64_t seq, int64_t shards, int64_t i,
                        int64_t j) {
  int64_t n = 0;
  for (int64_t q = 0; q < seq; ++q) {
    if (ShardOf(kind, seq, shards, q) != i) continue;
    for (int64_t k = 0; k < seq; ++k) {
      if (ShardOf(kind, seq, shards, k) == j && Allowed(mask, q, k)) ++n;
    }
  }
  return n;
}

TEST(LayoutTest, NamesRoundTrip) {
  for (Layout l : {Layout::kContiguous, Layout::kZigzag, Layout::kStriped, Layout::kDocZigzag}) {
    EXPECT_EQ(*ParseLayout(LayoutName(l)), l);
  }
  auto bad = ParseLayout("zig-zag");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("zig-zag"), std::string::npos);
}

TEST(LayoutTest, ZigzagRangesByHand) {
  // S = 16, N = 4: 8 chunks of 2 tokens; shard i holds chunks i and 7 - i.
  ShardLayout layout{Layout::kZigzag, 16, 4, 1};
  auto r0 = layout.Ranges(0);
  ASSERT_EQ(r0.size(), 2u);
  EXPECT_EQ(r0[0].begin, 0);
  EXPECT_EQ(r0[0].end, 2);
  EXPECT_EQ(r0[1].begin, 14);
  EXPECT_EQ(r0[1].end, 16);
  auto r1 = layout.Ranges(1);
  EXPECT_EQ(r1[0].begin, 2);
  EXPECT_EQ(r1[1].begin, 12);
  auto r3 = layout.Ranges(3);  // the middle two chunks: [6, 8) and [8, 10)
  EXPECT_EQ(r3[0].begin, 6);
  EXPECT_EQ(r3[0].end, 8);
  EXPECT_EQ(r3[1].begin, 8);
  EXPECT_EQ(r3[1].end, 10);
  EXPECT_EQ(layout.shard_tokens(), 4);
  EXPECT_EQ(layout.KernelBlockTokens(), 2);
}

TEST(LayoutTest, ContiguousRangesAndSubRanges) {
  ShardLayout contiguous{Layout::kContiguous, 12, 3, 1};
  auto r2 = contiguous.Ranges(2);
  ASSERT_EQ(r2.size(), 1u);
  EXPECT_EQ(r2[0].begin, 8);
  EXPECT_EQ(r2[0].end, 12);
  EXPECT_EQ(contiguous.KernelBlockTokens(), 4);

  // Zigzag S = 32, N = 4, U = 2: chunks of 4; shard 0 = [0,4) + [28,32).
  // Sub-shard 0 takes the first half of each range, sub-shard 1 the second.
  ShardLayout sub{Layout::kZigzag, 32, 4, 2};
  auto s0 = sub.SubRanges(0), s1 = sub.SubRanges(1), s7 = sub.SubRanges(7);
  ASSERT_EQ(s0.size(), 2u);
  EXPECT_EQ(s0[0].begin, 0);
  EXPECT_EQ(s0[0].end, 2);
  EXPECT_EQ(s0[1].begin, 28);
  EXPECT_EQ(s0[1].end, 30);
  EXPECT_EQ(s1[0].begin, 2);
  EXPECT_EQ(s1[1].begin, 30);
  // Sub-shard 7 = shard 3, part 1: shard 3 = [12,16) + [16,20) -> [14,16) + [18,20).
  EXPECT_EQ(s7[0].begin, 14);
  EXPECT_EQ(s7[1].begin, 18);
  EXPECT_EQ(s7[1].end, 20);
}

TEST(LayoutTest, BlockPairsMatchBruteForce) {
  const int64_t seq = 48;
  std::vector<Mask> masks = {Mask::Full(),
                             Mask::Causal(),
                             Mask::Window(5),
                             Mask::Window(13),
                             Mask::Documents({7, 1, 20, 12, 8}),
                             Mask::Documents({7, 1, 20, 12, 8}, true),
                             Mask::Prefix(10),
                             Mask::Prefix(30)};
  for (int64_t shards : {1, 2, 3, 4, 6}) {
    for (Layout kind : {Layout::kContiguous, Layout::kZigzag, Layout::kStriped}) {
      for (const Mask& mask : masks) {
        ShardLayout layout{kind, seq, shards, 1};
        if (!layout.Validate(mask).ok()) continue;  // striped: full and causal only
        PairCounter counter(mask, seq);
        int64_t total = 0;
        for (int64_t i = 0; i < shards; ++i) {
          for (int64_t j = 0; j < shards; ++j) {
            const int64_t pairs = layout.BlockPairs(counter, i, j);
            EXPECT_EQ(pairs, BruteBlockPairs(kind, mask, seq, shards, i, j))
                << LayoutName(kind) << " " << mask.ToString() << " N=" << shards << " block " << i
                << "," << j;
            total += pairs;
          }
        }
        EXPECT_EQ(total, counter.Total()) << LayoutName(kind) << " " << mask.ToString();
      }
    }
  }
}

TEST(LayoutTest, ZigzagCausalBlocksFollowTheClosedForm) {
  // Each zigzag shard has chunks i and 2N-1-i of c = S/(2N) tokens. For i != j exactly two of
  // the four chunk pairs lie fully below the diagonal: 2c^2. On the diagonal two chunk pairs
  // are triangles c(c+1)/2 and one is full: 2c^2 + c.
  for (auto [seq, shards] : {std::pair<int64_t, int64_t>{64, 4}, {96, 8}, {1 << 20, 16}}) {
    ShardLayout layout{Layout::kZigzag, seq, shards, 1};
    PairCounter counter(Mask::Causal(), seq);
    const int64_t c = seq / (2 * shards);
    for (int64_t i = 0; i < shards; ++i) {
      for (int64_t j = 0; j < shards; ++j) {
        EXPECT_EQ(layout.BlockPairs(counter, i, j), 2 * c * c + (i == j ? c : 0))
            << "S=" << seq << " N=" << shards << " block " << i << "," << j;
      }
    }
  }
}

TEST(LayoutTest, StripedCausalClosedForm) {
  // Striped S = 12, N = 3, n = 4 tokens per shard: n(n-1)/2 = 6, plus n = 4 when j <= i.
  ShardLayout layout{Layout::kStriped, 12, 3, 1};
  PairCounter counter(Mask::Causal(), 12);
  EXPECT_EQ(layout.BlockPairs(counter, 0, 0), 10);
  EXPECT_EQ(layout.BlockPairs(counter, 0, 2), 6);
  EXPECT_EQ(layout.BlockPairs(counter, 2, 0), 10);
}

TEST(LayoutTest, CutRowsAreTheRowsTheMaskCutsInEachRectangle) {
  // Zigzag causal, chunks of c: off the diagonal the two visible chunk pairs are whole (every key
  // before every query) and the other two hidden: no cut row however cut the block is. On the
  // diagonal each of the two triangles has c - 1 cut rows (row r of a chunk sees r + 1 of its c
  // keys) and the third chunk pair is whole: 2(c - 1) cut rows over 2c^2 + c pairs.
  {
    const int64_t seq = 64, shards = 4, c = seq / (2 * shards);
    ShardLayout layout{Layout::kZigzag, seq, shards, 1};
    PairCounter counter(Mask::Causal(), seq);
    for (int64_t i = 0; i < shards; ++i) {
      for (int64_t j = 0; j < shards; ++j) {
        const BlockWork w = layout.Work(counter, i, j);
        EXPECT_EQ(w.pairs, layout.BlockPairs(counter, i, j));
        EXPECT_EQ(w.cut_rows, i == j ? 2 * (c - 1) : 0) << i << "," << j;
      }
    }
    const BlockWork diagonal = layout.Work(counter, 1, 1);
    EXPECT_DOUBLE_EQ(diagonal.CutRowsPerPair(), static_cast<double>(2 * (c - 1)) / (2 * c * c + c));
  }
  // Contiguous: one rectangle per block; its cut rows are the rows that see some but not all of
  // the block's keys (brute-force counts, any mask); a full mask cuts nothing.
  for (const Mask& mask : {Mask::Causal(), Mask::Window(5), Mask::Full()}) {
    const int64_t seq = 24, shards = 4, n = seq / shards;
    ShardLayout layout{Layout::kContiguous, seq, shards, 1};
    PairCounter counter(mask, seq);
    for (int64_t i = 0; i < shards; ++i) {
      for (int64_t j = 0; j < shards; ++j) {
        const int64_t pairs = BruteBlockPairs(Layout::kContiguous, mask, seq, shards, i, j);
        const BlockWork w = layout.Work(counter, i, j);
        EXPECT_EQ(w.pairs, pairs);
        int64_t cut_rows = 0;
        for (int64_t q = i * n; q < (i + 1) * n; ++q) {
          int64_t visible = 0;
          for (int64_t k = j * n; k < (j + 1) * n; ++k) visible += Allowed(mask, q, k) ? 1 : 0;
          cut_rows += visible > 0 && visible < n ? 1 : 0;
        }
        EXPECT_EQ(w.cut_rows, cut_rows) << mask.ToString() << " " << i << "," << j;
      }
    }
  }
  // Striped causal, S = 12 over 3 shards (n = 4): shard 0 holds 0, 3, 6, 9, shard 2 holds 2, 5, 8,
  // 11. Block (0, 0): queries 0, 3, 6, 9 see 1, 2, 3, 4 of the keys: 3 cut rows. Block (0, 2): they
  // see 0, 1, 2, 3: 3 cut rows. Full: none.
  ShardLayout striped{Layout::kStriped, 12, 3, 1};
  PairCounter causal(Mask::Causal(), 12), full(Mask::Full(), 12);
  EXPECT_EQ(striped.Work(causal, 0, 0).cut_rows, 3);
  EXPECT_EQ(striped.Work(causal, 0, 2).cut_rows, 3);
  EXPECT_DOUBLE_EQ(striped.Work(causal, 0, 0).CutRowsPerPair(), 3.0 / 10.0);
  EXPECT_EQ(striped.Work(full, 0, 2).cut_rows, 0);
  EXPECT_DOUBLE_EQ(BlockWork{}.CutRowsPerPair(), 0.0);
}

TEST(LayoutTest, ValidateMessages) {
  ShardLayout zigzag{Layout::kZigzag, 100, 8, 1};
  Status s = zigzag.Validate(Mask::Causal());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("100"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("16"), std::string::npos) << s.message();  // 2N chunks
  EXPECT_NE(s.message().find("zigzag"), std::string::npos) << s.message();

  // 96 = 2 * 8 * 6 is fine for zigzag but not with 4 sub-shards (needs 64 | S).
  EXPECT_TRUE((ShardLayout{Layout::kZigzag, 96, 8, 1}.Validate(Mask::Causal()).ok()));
  Status sub = ShardLayout{Layout::kZigzag, 96, 8, 4}.Validate(Mask::Causal());
  ASSERT_FALSE(sub.ok());
  EXPECT_NE(sub.message().find("64"), std::string::npos) << sub.message();

  Status striped = ShardLayout{Layout::kStriped, 64, 4, 1}.Validate(Mask::Window(8));
  ASSERT_FALSE(striped.ok());
  EXPECT_NE(striped.message().find("striped"), std::string::npos);
  EXPECT_TRUE((ShardLayout{Layout::kStriped, 64, 4, 1}.Validate(Mask::Full()).ok()));

  EXPECT_FALSE((ShardLayout{Layout::kContiguous, 64, 0, 1}.Validate(Mask::Causal()).ok()));
}

}  // namespace
}  // namespace meshplan

namespace meshplan {
namespace {

// Doc-zigzag from its definition (TransformerEngine's thd_partition_src_index): token t of a
// document of length L starting at s is in chunk (t - s) / (L / 2N) of it; chunk x < N is shard x,
// else shard 2N - 1 - x.
int64_t DocShardOf(const std::vector<int64_t>& documents, int64_t shards, int64_t t) {
  int64_t start = 0;
  for (int64_t length : documents) {
    if (t < start + length) {
      const int64_t chunk = (t - start) / (length / (2 * shards));
      return chunk < shards ? chunk : 2 * shards - 1 - chunk;
    }
    start += length;
  }
  return -1;
}

ShardLayout DocZigzag(const std::vector<int64_t>& documents, int64_t shards, int64_t subdivide) {
  int64_t seq = 0;
  for (int64_t length : documents) seq += length;
  ShardLayout layout{Layout::kDocZigzag, seq, shards, subdivide};
  AttachDocuments(&layout, std::make_shared<const std::vector<int64_t>>(documents));
  return layout;
}

TEST(DocZigzagLayout, RangesByHand) {
  // Documents 8 and 16 over 2 shards: chunks of 2 and 4 tokens. Shard 0 takes chunk 0 and 3 of
  // each: [0,2) [6,8) of the first, [8,12) [20,24) of the second; shard 1 chunks 1 and 2.
  const ShardLayout layout = DocZigzag({8, 16}, 2, 1);
  ASSERT_TRUE(layout.Validate(Mask::Documents({8, 16})).ok());
  const std::vector<TokenRange> r0 = layout.Ranges(0), r1 = layout.Ranges(1);
  ASSERT_EQ(r0.size(), 4u);
  ASSERT_EQ(r1.size(), 4u);
  const int64_t want0[4][2] = {{0, 2}, {6, 8}, {8, 12}, {20, 24}};
  const int64_t want1[4][2] = {{2, 4}, {4, 6}, {12, 16}, {16, 20}};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(r0[i].begin, want0[i][0]);
    EXPECT_EQ(r0[i].end, want0[i][1]);
    EXPECT_EQ(r1[i].begin, want1[i][0]);
    EXPECT_EQ(r1[i].end, want1[i][1]);
  }
  EXPECT_EQ(layout.shard_tokens(), 12);
  EXPECT_EQ(layout.RangesPerShard(), 4);
  EXPECT_EQ(layout.LaunchesPerBlock(), 1);  // one variable-length call for every document
  // Pair-weighted chunk: (2^3 + 4^3) / (2^2 + 4^2) = 72 / 20 = 3.6, rounded to 4.
  EXPECT_EQ(layout.KernelBlockTokens(), 4);
  // Sub-shards (U = 2 needs multiples of 8: both are): each range halved.
  const ShardLayout sub = DocZigzag({8, 16}, 2, 2);
  ASSERT_TRUE(sub.Validate(Mask::Documents({8, 16})).ok());
  const std::vector<TokenRange> s1 = sub.SubRanges(1);  // shard 0, second half of each range
  ASSERT_EQ(s1.size(), 4u);
  EXPECT_EQ(s1[0].begin, 1);
  EXPECT_EQ(s1[3].begin, 22);
}

TEST(DocZigzagLayout, BlockWorkByHandAndByBruteForce) {
  // Causal documents, chunk c: a diagonal block 2c^2 + c pairs and 2(c - 1) cut rows, any other
  // 2c^2 and none (compute_model.cc derives both); documents 8 and 16 over 2 shards, c = 2 and 4:
  // diagonal 10 + 36 = 46 pairs, 2 + 6 = 8 cut rows; off-diagonal 8 + 32 = 40. Bidirectional:
  // 4c^2 = 16 + 64 = 80 everywhere, uncut.
  const ShardLayout layout = DocZigzag({8, 16}, 2, 1);
  const PairCounter causal(Mask::Documents({8, 16}), 24), full(Mask::Documents({8, 16}, true), 24);
  EXPECT_EQ(layout.Work(causal, 0, 0).pairs, 46);
  EXPECT_EQ(layout.Work(causal, 0, 0).cut_rows, 8);
  EXPECT_EQ(layout.Work(causal, 1, 0).pairs, 40);
  EXPECT_EQ(layout.Work(causal, 0, 1).pairs, 40);
  EXPECT_EQ(layout.Work(causal, 0, 1).cut_rows, 0);
  EXPECT_EQ(layout.Work(full, 1, 0).pairs, 80);
  EXPECT_EQ(layout.Work(full, 1, 1).cut_rows, 0);
  // Every block against counting token pairs by the definitions (DocShardOf, Allowed).
  const std::vector<int64_t> documents = {12, 36, 24, 48, 24};
  for (bool bidirectional : {false, true}) {
    const Mask mask = Mask::Documents(documents, bidirectional);
    const PairCounter counter(mask, 144);
    for (int64_t shards : {1, 2, 3, 6}) {
      const ShardLayout l = DocZigzag(documents, shards, 1);
      ASSERT_TRUE(l.Validate(mask).ok()) << shards;
      int64_t total = 0;
      for (int64_t i = 0; i < shards; ++i) {
        for (int64_t j = 0; j < shards; ++j) {
          int64_t brute = 0;
          for (int64_t q = 0; q < 144; ++q) {
            if (DocShardOf(documents, shards, q) != i) continue;
            for (int64_t k = 0; k < 144; ++k)
              brute += DocShardOf(documents, shards, k) == j && Allowed(mask, q, k) ? 1 : 0;
          }
          EXPECT_EQ(l.Work(counter, i, j).pairs, brute) << shards << " block " << i << "," << j;
          total += brute;
        }
      }
      EXPECT_EQ(total, counter.Total());
    }
  }
}

TEST(DocZigzagLayout, ValidateNamesTheDocumentAndTheMultiple) {
  // 2 x 2 shards x 1 = 4: 6 is not a multiple; the message names document 2, its start and 4.
  const ShardLayout layout = DocZigzag({8, 6, 10}, 2, 1);
  const Status st = layout.Validate(Mask::Documents({8, 6, 10}));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("document 2 (tokens 8..) has 6"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("multiple of 4"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("align=4"), std::string::npos) << st.message();
  // Sub-shards multiply the unit: 2 x 2 x 2 = 8, and 12 is no multiple of it.
  const Status sub = DocZigzag({8, 12, 12}, 2, 2).Validate(Mask::Documents({8, 12, 12}));
  ASSERT_FALSE(sub.ok());
  EXPECT_NE(sub.message().find("multiple of 8"), std::string::npos) << sub.message();
  // Not a document mask, or no documents given.
  EXPECT_FALSE(DocZigzag({8, 16}, 2, 1).Validate(Mask::Causal()).ok());
  ShardLayout bare{Layout::kDocZigzag, 24, 2, 1};
  EXPECT_FALSE(bare.Validate(Mask::Documents({8, 16})).ok());
  // MakeShardLayout gives it the mask's documents.
  const PairCounter counter(Mask::Documents({8, 16}), 24);
  EXPECT_TRUE(
      MakeShardLayout(Layout::kDocZigzag, counter, 2, 1).Validate(Mask::Documents({8, 16})).ok());
}

// WorkSymmetry's claims against every block's work (ShardLayout::Work, itself checked token by
// token above) and, where the layout has a ShardOf, against counted token pairs: kUniform means
// every block equals block (0, 0); kDiagonal means every diagonal block equals (0, 0) and every
// other equals (0, 1). The combinations the simulator's proofs rely on are named, with the class
// layout.cc derives for them: zigzag under a causal mask and doc-zigzag under causal documents
// are kDiagonal (an off-diagonal block is two whole chunk pairs), every layout under the full
// mask and doc-zigzag under bidirectional documents kUniform.
TEST(WorkSymmetry, EveryBlockFollowsTheClaimedClass) {
  const std::vector<int64_t> documents = {12, 36, 24, 48, 24};  // multiples of 2N for N | 6
  const int64_t seq = 144;
  const std::vector<Mask> masks = {Mask::Full(),
                                   Mask::Causal(),
                                   Mask::Window(20),
                                   Mask::Prefix(30),
                                   Mask::Documents(documents),
                                   Mask::Documents(documents, true)};
  int uniform = 0, diagonal = 0;
  for (int64_t shards : {1, 2, 3, 6}) {
    for (Layout kind : {Layout::kContiguous, Layout::kZigzag, Layout::kStriped, Layout::kBalanced,
                        Layout::kDocZigzag}) {
      for (const Mask& mask : masks) {
        const PairCounter counter(mask, seq);
        const ShardLayout layout = MakeShardLayout(kind, counter, shards, 1);
        if (!layout.Validate(mask).ok()) continue;
        const std::string what =
            std::string(LayoutName(kind)) + " " + mask.ToString() + " N=" + std::to_string(shards);
        const BlockWorkSymmetry claim = WorkSymmetry(layout, mask);
        const bool zigzag_family =
            (kind == Layout::kZigzag && mask.kind == MaskKind::kCausal) ||
            (kind == Layout::kDocZigzag && mask.kind == MaskKind::kDocuments);
        if (mask.kind == MaskKind::kFull ||
            (kind == Layout::kDocZigzag && mask.kind == MaskKind::kDocumentsFull)) {
          EXPECT_EQ(claim, BlockWorkSymmetry::kUniform) << what;
        } else if (zigzag_family) {
          EXPECT_EQ(claim, BlockWorkSymmetry::kDiagonal) << what;
        }
        if (claim == BlockWorkSymmetry::kNone) continue;
        claim == BlockWorkSymmetry::kUniform ? ++uniform : ++diagonal;
        const BlockWork same = layout.Work(counter, 0, 0);
        const BlockWork other = layout.Work(counter, 0, shards > 1 ? 1 : 0);
        for (int64_t i = 0; i < shards; ++i) {
          for (int64_t j = 0; j < shards; ++j) {
            const BlockWork want = claim == BlockWorkSymmetry::kDiagonal && i != j ? other : same;
            const BlockWork got = layout.Work(counter, i, j);
            EXPECT_EQ(got.pairs, want.pairs) << what << " block " << i << "," << j;
            EXPECT_EQ(got.cut_rows, want.cut_rows) << what << " block " << i << "," << j;
            if (kind != Layout::kBalanced && kind != Layout::kDocZigzag) {
              EXPECT_EQ(BruteBlockPairs(kind, mask, seq, shards, i, j), want.pairs)
                  << what << " block " << i << "," << j;
            }
          }
        }
      }
    }
  }
  // Not vacuous: full masks on four layouts and bidirectional documents at four shard counts;
  // zigzag causal and doc-zigzag causal documents at four.
  EXPECT_GE(uniform, 16);
  EXPECT_GE(diagonal, 8);
}

}  // namespace
}  // namespace meshplan
