#include "core/sequence/mask.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

namespace meshplan {
namespace {

// The definition of each mask written out directly (mask.h), independent of PairCounter.
bool MaskAllows(const Mask& mask, int64_t q, int64_t k) {
  switch (mask.kind) {
    case MaskKind::kFull:
      return true;
    case MaskKind::kCausal:
      return k <= q;
    case MaskKind::kWindow:
      return q - mask.window < k && k <= q;
    case MaskKind::kDocuments:
    case MaskKind::kDocumentsFull: {
      if (mask.kind == MaskKind::kDocuments && k > q) return false;
      int64_t start = 0;
      for (int64_t length : mask.document_lengths) {
        const int64_t end = start + length;
        if (q < end) return start <= k && k < end;  // q's document is [start, end)
        start = end;
      }
      return false;
    }
    case MaskKind::kPrefix:
      // Both prefix tokens (bidirectional inside the prefix), or a causal pair.
      return (q < mask.prefix && k < mask.prefix) || k <= q;
  }
  return false;
}

int64_t BruteCount(const Mask& mask, int64_t q0, int64_t q1, int64_t k0, int64_t k1) {
  int64_t n = 0;
  for (int64_t q = q0; q < q1; ++q) {
    for (int64_t k = k0; k < k1; ++k) n += MaskAllows(mask, q, k) ? 1 : 0;
  }
  return n;
}

// Rows of the rectangle that see some but not all of its keys.
int64_t BruteCutRows(const Mask& mask, int64_t q0, int64_t q1, int64_t k0, int64_t k1) {
  int64_t rows = 0;
  for (int64_t q = q0; q < q1; ++q) {
    const int64_t visible = BruteCount(mask, q, q + 1, k0, k1);
    rows += visible > 0 && visible < k1 - k0 ? 1 : 0;
  }
  return rows;
}

void CheckRandomRectangles(const Mask& mask, int64_t seq, std::mt19937* rng) {
  PairCounter counter(mask, seq);
  std::uniform_int_distribution<int64_t> pos(0, seq);
  for (int trial = 0; trial < 400; ++trial) {
    int64_t q0 = pos(*rng), q1 = pos(*rng), k0 = pos(*rng), k1 = pos(*rng);
    if (q0 > q1) std::swap(q0, q1);
    if (k0 > k1) std::swap(k0, k1);
    ASSERT_EQ(counter.Count(q0, q1, k0, k1), BruteCount(mask, q0, q1, k0, k1))
        << mask.ToString() << " S=" << seq << " q=[" << q0 << "," << q1 << ") k=[" << k0 << ","
        << k1 << ")";
    ASSERT_EQ(counter.CutRows(q0, q1, k0, k1), BruteCutRows(mask, q0, q1, k0, k1))
        << "cut rows: " << mask.ToString() << " S=" << seq << " q=[" << q0 << "," << q1 << ") k=["
        << k0 << "," << k1 << ")";
  }
  EXPECT_EQ(counter.Total(), BruteCount(mask, 0, seq, 0, seq)) << mask.ToString();
}

TEST(PairCounterTest, MatchesBruteForceOnRandomRectangles) {
  std::mt19937 rng(12345);
  for (int64_t seq : {1, 2, 7, 16, 37, 64}) {
    CheckRandomRectangles(Mask::Full(), seq, &rng);
    CheckRandomRectangles(Mask::Causal(), seq, &rng);
    for (int64_t w : {int64_t{1}, int64_t{3}, seq / 2 + 1, seq, seq + 5}) {
      CheckRandomRectangles(Mask::Window(w), seq, &rng);
    }
    // Random document splits, including single-token documents.
    for (int split = 0; split < 5; ++split) {
      std::vector<int64_t> lengths;
      int64_t left = seq;
      while (left > 0) {
        std::uniform_int_distribution<int64_t> len(1, std::min<int64_t>(left, 9));
        lengths.push_back(len(rng));
        left -= lengths.back();
      }
      CheckRandomRectangles(Mask::Documents(lengths), seq, &rng);
      CheckRandomRectangles(Mask::Documents(lengths, true), seq, &rng);
    }
    for (int64_t n : {int64_t{1}, int64_t{2}, seq / 2 + 1, seq}) {
      if (n <= seq) CheckRandomRectangles(Mask::Prefix(n), seq, &rng);
    }
  }
}

TEST(PairCounterTest, HandDerivedCutRows) {
  // Causal diagonal block [0, 8) x [0, 8): row q sees q + 1 keys, rows 0..6 cut: 7. Shifted by 4
  // (queries [4, 12)): rows 4, 5, 6 see 5, 6, 7 of 8: 3. Keys wholly before the queries: 0.
  const PairCounter causal(Mask::Causal(), 16);
  EXPECT_EQ(causal.CutRows(0, 8, 0, 8), 7);
  EXPECT_EQ(causal.CutRows(4, 12, 0, 8), 3);
  EXPECT_EQ(causal.CutRows(8, 16, 0, 8), 0);
  // Window 4 on [8, 16) x [0, 8): row q sees keys [q - 3, q] n [0, 8): rows 8, 9, 10 see 3, 2, 1
  // keys; from 11 on none: 3. On the diagonal [0, 8) x [0, 8): rows 0..7 see 1, 2, 3, 4, 4, 4, 4, 4
  // of 8 keys: all 8 cut.
  const PairCounter window(Mask::Window(4), 16);
  EXPECT_EQ(window.CutRows(8, 16, 0, 8), 3);
  EXPECT_EQ(window.CutRows(0, 8, 0, 8), 8);
  // Documents of 6 and 10 tokens, causal, [0, 16) x [4, 8): rows 0..3 see nothing; rows 4, 5 see
  // keys 4..q of the first document (1 and 2 of 4: cut); in the second document rows 6, 7 see
  // keys 6..q (1, 2 of 4) and rows 8..15 keys 6, 7 (2 of 4), all cut: 2 + 10 = 12.
  const PairCounter docs(Mask::Documents({6, 10}), 16);
  EXPECT_EQ(docs.CutRows(0, 16, 4, 8), 12);
  // Full: nothing is ever cut.
  EXPECT_EQ(PairCounter(Mask::Full(), 16).CutRows(0, 16, 0, 16), 0);
}

TEST(PairCounterTest, HandDerivedTotals) {
  // Full: S^2.
  EXPECT_EQ(PairCounter(Mask::Full(), 10).Total(), 100);
  // Causal: query q sees q+1 keys, sum = S(S+1)/2.
  EXPECT_EQ(PairCounter(Mask::Causal(), 10).Total(), 55);
  const int64_t big = int64_t{1} << 30;  // the largest supported sequence: no overflow
  EXPECT_EQ(PairCounter(Mask::Causal(), big).Total(), big * (big + 1) / 2);
  // Window W on S tokens: the first W queries see 1..W keys, the other S-W see W each:
  // W(W+1)/2 + (S-W)W. S=10, W=3: 6 + 21 = 27.
  EXPECT_EQ(PairCounter(Mask::Window(3), 10).Total(), 27);
  const int64_t s = int64_t{1} << 20, w = 4096;
  EXPECT_EQ(PairCounter(Mask::Window(w), s).Total(), w * (w + 1) / 2 + (s - w) * w);
  // A window at least S long is plain causal.
  EXPECT_EQ(PairCounter(Mask::Window(10), 10).Total(), 55);
  // Documents 3, 5, 2: causal inside each, 6 + 15 + 3 = 24.
  EXPECT_EQ(PairCounter(Mask::Documents({3, 5, 2}), 10).Total(), 24);
  // Cross-document rectangle: queries of document 2 against keys of document 1 see nothing.
  EXPECT_EQ(PairCounter(Mask::Documents({3, 5, 2}), 10).Count(3, 8, 0, 3), 0);
  // Bidirectional documents 3, 5, 2: the squares 9 + 25 + 4 = 38.
  EXPECT_EQ(PairCounter(Mask::Documents({3, 5, 2}, true), 10).Total(), 38);
  // Prefix N on S tokens: the N prefix queries see the N prefix keys, every later query q sees
  // q + 1 keys: N^2 + sum_{q=N}^{S-1} (q + 1) = N^2 + (S(S+1) - N(N+1)) / 2.
  // S = 10, N = 4: 16 + (110 - 20) / 2 = 61. N = 1 is plain causal (55), N = S is full (100).
  EXPECT_EQ(PairCounter(Mask::Prefix(4), 10).Total(), 61);
  EXPECT_EQ(PairCounter(Mask::Prefix(1), 10).Total(), 55);
  EXPECT_EQ(PairCounter(Mask::Prefix(10), 10).Total(), 100);
  // Above the diagonal only the prefix keys are visible: q in [0, 2), k in [2, 8), N = 4:
  // keys 2 and 3 for both queries, 4.
  EXPECT_EQ(PairCounter(Mask::Prefix(4), 10).Count(0, 2, 2, 8), 4);
  // Causal off-diagonal block is full: q in [4, 8), k in [0, 4): 16.
  EXPECT_EQ(PairCounter(Mask::Causal(), 8).Count(4, 8, 0, 4), 16);
  EXPECT_EQ(PairCounter(Mask::Causal(), 8).Count(0, 4, 4, 8), 0);
}

TEST(MaskTest, ParseSimpleForms) {
  EXPECT_EQ(ParseMask("full")->kind, MaskKind::kFull);
  EXPECT_EQ(ParseMask("causal")->kind, MaskKind::kCausal);
  auto window = ParseMask("window:4K");
  ASSERT_TRUE(window.ok());
  EXPECT_EQ(window->kind, MaskKind::kWindow);
  EXPECT_EQ(window->window, 4096);
  EXPECT_EQ(window->ToString(), "window:4K");
}

TEST(MaskTest, ParsePrefixAndSampledDocuments) {
  auto prefix = ParseMask("prefix:64K");
  ASSERT_TRUE(prefix.ok());
  EXPECT_EQ(prefix->kind, MaskKind::kPrefix);
  EXPECT_EQ(prefix->prefix, 65536);
  EXPECT_EQ(prefix->ToString(), "prefix:64K");
  auto sampled = ParseMask("docs-full-sampled:uniform:min=2:max=5:seed=9");
  ASSERT_TRUE(sampled.ok()) << sampled.status().message();
  EXPECT_EQ(sampled->kind, MaskKind::kDocumentsFull);
  ASSERT_TRUE(sampled->sampler.has_value());
  EXPECT_EQ(sampled->sampler->seed, 9u);
  EXPECT_EQ(sampled->ToString(), "docs-full-sampled:uniform:min=2:max=5:seed=9");
  EXPECT_EQ(ParseMask("docs-sampled:lognormal:median=8K")->kind, MaskKind::kDocuments);
}

TEST(MaskTest, SampledDocumentsAreDrawnForEachSequenceLength) {
  Mask mask = *ParseMask("docs-sampled:uniform:min=3:max=3");
  // Not drawn yet: the check names the missing step instead of counting nothing.
  EXPECT_EQ(ValidateMask(mask, 12).code(), ErrorCode::kInternal);
  ASSERT_TRUE(DrawDocuments(&mask, 12).ok());
  // Every draw is 3 tokens: 12 tokens are 4 documents.
  EXPECT_EQ(mask.document_lengths, (std::vector<int64_t>{3, 3, 3, 3}));
  EXPECT_TRUE(ValidateMask(mask, 12).ok());
  // A new length draws again; 7 = 3 + 3 + 1 (the last document cut to fit).
  ASSERT_TRUE(DrawDocuments(&mask, 7).ok());
  EXPECT_EQ(mask.document_lengths, (std::vector<int64_t>{3, 3, 1}));
  // A mask from a file is never redrawn.
  Mask fixed = Mask::Documents({4, 4});
  ASSERT_TRUE(DrawDocuments(&fixed, 100).ok());
  EXPECT_EQ(fixed.document_lengths, (std::vector<int64_t>{4, 4}));
}

TEST(MaskTest, PrefixMustLieInsideTheSequence) {
  EXPECT_TRUE(ValidateMask(Mask::Prefix(16), 16).ok());
  EXPECT_FALSE(ValidateMask(Mask::Prefix(17), 16).ok());
  EXPECT_FALSE(ValidateMask(Mask::Prefix(0), 16).ok());
}

TEST(MaskTest, ParseErrors) {
  for (const char* text : {"", "bogus", "Causal", "window:", "window:0", "window:-3", "window:1.5",
                           "docs:", "docs-full:", "prefix:", "prefix:0",
                           "docs-sampled:", "docs-sampled:poisson:mean=3",
                           "docs-sampled:uniform:min=3", "docs-full-sampled:lognormal:sigma=1"}) {
    auto mask = ParseMask(text);
    EXPECT_FALSE(mask.ok()) << text;
    if (!mask.ok()) {
      EXPECT_EQ(mask.status().code(), ErrorCode::kInvalidInput) << text;
    }
  }
}

class DocumentFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (std::filesystem::temp_directory_path() /
             ("meshplan_docs_" + std::to_string(::getpid()) + "_" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".txt"))
                .string();
  }
  void TearDown() override { std::filesystem::remove(path_); }
  void Write(const std::string& text) { std::ofstream(path_) << text; }
  std::string path_;
};

TEST_F(DocumentFileTest, ReadsLengthsWithCommentsCommasAndSuffixes) {
  Write("# lengths of packed documents\n3, 5 # trailing comment\n\n  2\t1K\n");
  auto lengths = ReadDocumentLengths(path_);
  ASSERT_TRUE(lengths.ok()) << lengths.status().message();
  EXPECT_EQ(*lengths, (std::vector<int64_t>{3, 5, 2, 1024}));
  auto mask = ParseMask("docs:" + path_);
  ASSERT_TRUE(mask.ok());
  EXPECT_EQ(mask->kind, MaskKind::kDocuments);
  EXPECT_EQ(mask->documents_source, path_);
  EXPECT_TRUE(ValidateMask(*mask, 1034).ok());
  Status bad_sum = ValidateMask(*mask, 1000);
  ASSERT_FALSE(bad_sum.ok());
  EXPECT_NE(bad_sum.message().find("1034"), std::string::npos);  // what they sum to
  EXPECT_NE(bad_sum.message().find("1000"), std::string::npos);  // what the sequence has
}

TEST_F(DocumentFileTest, BadEntryNamesFileAndLine) {
  Write("3 4\n5 x7\n");
  auto lengths = ReadDocumentLengths(path_);
  ASSERT_FALSE(lengths.ok());
  EXPECT_NE(lengths.status().message().find(path_ + ":2:"), std::string::npos)
      << lengths.status().message();
  EXPECT_NE(lengths.status().message().find("x7"), std::string::npos);
}

TEST_F(DocumentFileTest, ZeroLengthAndEmptyFileAreErrors) {
  Write("3 0 4\n");
  EXPECT_FALSE(ReadDocumentLengths(path_).ok());
  Write("# nothing\n\n");
  auto empty = ReadDocumentLengths(path_);
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find(path_), std::string::npos);
}

TEST_F(DocumentFileTest, MissingFileIsNotFound) {
  auto lengths = ReadDocumentLengths(path_ + ".missing");
  ASSERT_FALSE(lengths.ok());
  EXPECT_EQ(lengths.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(lengths.status().message().find(path_ + ".missing"), std::string::npos);
}

TEST(MaskTest, ValidateWindowAndDocumentLengths) {
  EXPECT_FALSE(ValidateMask(Mask::Window(0), 16).ok());
  EXPECT_TRUE(ValidateMask(Mask::Window(32), 16).ok());  // longer than the sequence: allowed
  EXPECT_FALSE(ValidateMask(Mask::Documents({4, -1, 13}), 16).ok());
  EXPECT_TRUE(ValidateMask(Mask::Documents({4, 12}), 16).ok());
}

// Issue 17: four lengths of 2^62 and one of 1024 sum to 2^64 + 1024, which an int64 sum wraps
// around to 1024, so a 1024-token sequence accepted them.
TEST(MaskTest, DocumentLengthsWhoseSumWrapsToSeqAreRefused) {
  const int64_t big = int64_t{1} << 62;
  Mask mask = Mask::Documents({big, big, big, big, 1024});
  mask.documents_source = "docs.txt";
  const Status st = ValidateMask(mask, 1024);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(
      st.message(),
      "document lengths in 'docs.txt' sum to more than 2^63 - 1 tokens, but the sequence has 1024");
}

TEST(MaskTest, WindowFarLongerThanTheSequenceCountsLikeCausalWithoutOverflow) {
  // window 2^62 on 1024 tokens: every causal pair, 1024 x 1025 / 2 = 524800; k + window would
  // overflow int64 without the clamp to the sequence length.
  PairCounter counter(Mask::Window(int64_t{1} << 62), 1024);
  EXPECT_EQ(counter.Total(), 524800);
  EXPECT_EQ(counter.Count(512, 1024, 0, 512),
            512 * 512);  // every later query sees every earlier key
}

TEST_F(DocumentFileTest, ZeroToAPowerIsAnErrorNamingFileAndLine) {
  // Issue 17: "0^2" in a documents file died with SIGFPE.
  Write("4 4\n0^2\n");
  auto lengths = ReadDocumentLengths(path_);
  ASSERT_FALSE(lengths.ok());
  EXPECT_EQ(lengths.status().message(), path_ +
                                            ":2: document length: '0^2' is not a valid count: the "
                                            "base of a power must be at least 1");
}

TEST(MaskTest, DocumentsFileThatIsADirectorySaysSo) {
  const std::string dir = std::filesystem::temp_directory_path().string();
  auto mask = ParseMask("docs:" + dir);
  ASSERT_FALSE(mask.ok());
  EXPECT_EQ(mask.status().message(), dir + ": is a directory, expected a file of document lengths");
}

}  // namespace
}  // namespace meshplan
