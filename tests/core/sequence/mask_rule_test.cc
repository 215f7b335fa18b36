// The one mask rule (core/sequence/mask_rule.h) against visible sets written out by hand for every
// mask kind (tests/core/sequence/mask_grids.h): each pair, every rectangle's none/all claims, and
// core/sequence/mask.cc's closed-form pair and cut-row counts on the same grids.
#include "core/sequence/mask_rule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "core/sequence/mask.h"
#include "tests/core/sequence/mask_grids.h"

namespace meshplan {
namespace {

using mask_grids::HandWrittenGrids;
using mask_grids::kGridTokens;
using mask_grids::MaskGrid;

// The GPU kernels receive the kind as this integer code (executor/device/kernel_args.h); the
// values must not move, and launch.cu refuses any code past the last.
static_assert(static_cast<int32_t>(MaskKind::kFull) == 0);
static_assert(static_cast<int32_t>(MaskKind::kCausal) == 1);
static_assert(static_cast<int32_t>(MaskKind::kWindow) == 2);
static_assert(static_cast<int32_t>(MaskKind::kDocuments) == 3);
static_assert(static_cast<int32_t>(MaskKind::kDocumentsFull) == 4);
static_assert(static_cast<int32_t>(MaskKind::kPrefix) == 5);
static_assert(kLastMaskKind == MaskKind::kPrefix);

// Document index of each token, from the lengths (0 for masks without documents).
std::vector<int64_t> DocumentOfEachToken(const Mask& mask) {
  std::vector<int64_t> doc(static_cast<size_t>(kGridTokens), 0);
  int64_t token = 0;
  for (size_t d = 0; d < mask.document_lengths.size(); ++d) {
    for (int64_t i = 0; i < mask.document_lengths[d]; ++i)
      doc[static_cast<size_t>(token++)] = static_cast<int64_t>(d);
  }
  return doc;
}

TEST(MaskRule, EveryKindHasAHandWrittenGrid) {
  std::set<int32_t> covered;
  for (const MaskGrid& g : HandWrittenGrids()) {
    ASSERT_TRUE(ValidateMask(g.mask, kGridTokens).ok()) << g.name;
    ASSERT_EQ(g.rows.size(), static_cast<size_t>(kGridTokens)) << g.name;
    for (const std::string& row : g.rows)
      ASSERT_EQ(row.size(), static_cast<size_t>(kGridTokens)) << g.name;
    covered.insert(static_cast<int32_t>(g.mask.kind));
  }
  for (int32_t code = 0; code <= static_cast<int32_t>(kLastMaskKind); ++code) {
    EXPECT_TRUE(covered.count(code))
        << "mask kind " << code << " has no grid in tests/core/sequence/mask_grids.h";
  }
}

TEST(MaskRule, KindCodesAndDocumentKinds) {
  EXPECT_FALSE(IsMaskKind(-1));
  for (int32_t code = 0; code <= static_cast<int32_t>(kLastMaskKind); ++code)
    EXPECT_TRUE(IsMaskKind(code));
  EXPECT_FALSE(IsMaskKind(static_cast<int32_t>(kLastMaskKind) + 1));
  EXPECT_FALSE(HasDocuments(MaskKind::kFull));
  EXPECT_FALSE(HasDocuments(MaskKind::kCausal));
  EXPECT_FALSE(HasDocuments(MaskKind::kWindow));
  EXPECT_TRUE(HasDocuments(MaskKind::kDocuments));
  EXPECT_TRUE(HasDocuments(MaskKind::kDocumentsFull));
  EXPECT_FALSE(HasDocuments(MaskKind::kPrefix));
}

TEST(MaskRule, EveryPairMatchesTheHandWrittenGrid) {
  for (const MaskGrid& g : HandWrittenGrids()) {
    const std::vector<int64_t> doc = DocumentOfEachToken(g.mask);
    int64_t lookups = 0;
    const auto doc_of = [&](int64_t t) {
      ++lookups;
      return doc[static_cast<size_t>(t)];
    };
    // Any index that grows with the document will do: shifted and scaled ones give the same.
    const auto other_doc_of = [&](int64_t t) { return 3 * doc[static_cast<size_t>(t)] + 7; };
    for (int64_t q = 0; q < kGridTokens; ++q) {
      for (int64_t k = 0; k < kGridTokens; ++k) {
        const bool expected = g.Sees(q, k);
        EXPECT_EQ(Visible(g.mask.Params(), q, k, doc_of), expected)
            << g.name << " q " << q << " k " << k;
        EXPECT_EQ(Visible(g.mask.Params(), q, k, other_doc_of), expected)
            << g.name << " q " << q << " k " << k;
        EXPECT_EQ(VisibleInDocuments(g.mask.Params(), q, k, doc[static_cast<size_t>(q)],
                                     doc[static_cast<size_t>(k)]),
                  expected)
            << g.name << " q " << q << " k " << k;
      }
    }
    // Kinds without documents never ask for one.
    if (!g.mask.IsDocuments()) {
      EXPECT_EQ(lookups, 0) << g.name;
    }
  }
}

// Every row of every grid sees one range of keys, and VisibleKeys names it: the grid's first and
// last visible key of the row (an empty range for a row that sees none), and every key between
// them visible.
TEST(MaskRule, EachRowSeesTheOneKeyRangeVisibleKeysNames) {
  for (const MaskGrid& g : HandWrittenGrids()) {
    const std::vector<int64_t> doc = DocumentOfEachToken(g.mask);
    for (int64_t q = 0; q < kGridTokens; ++q) {
      // q's document by hand: the tokens around q with q's index (without documents every token
      // has index 0, so the whole grid, which those kinds do not read).
      int64_t doc_first = q, doc_last = q;
      while (doc_first > 0 &&
             doc[static_cast<size_t>(doc_first - 1)] == doc[static_cast<size_t>(q)])
        --doc_first;
      while (doc_last + 1 < kGridTokens &&
             doc[static_cast<size_t>(doc_last + 1)] == doc[static_cast<size_t>(q)])
        ++doc_last;
      const VisibleKeyRange range = VisibleKeys(g.mask.Params(), q, doc_first, doc_last);
      for (int64_t k = 0; k < kGridTokens; ++k) {
        EXPECT_EQ(range.Contains(k), g.Sees(q, k)) << g.name << " q " << q << " k " << k;
      }
    }
  }
}

// Every rectangle [q_lo, q_hi] x [k_lo, k_hi] of every grid: the none/all claims are exact.
TEST(MaskRule, RectangleClaimsAreExactOnEveryRectangle) {
  for (const MaskGrid& g : HandWrittenGrids()) {
    const std::vector<int64_t> doc = DocumentOfEachToken(g.mask);
    const auto doc_of = [&](int64_t t) { return doc[static_cast<size_t>(t)]; };
    for (int64_t q_lo = 0; q_lo < kGridTokens; ++q_lo) {
      for (int64_t q_hi = q_lo; q_hi < kGridTokens; ++q_hi) {
        for (int64_t k_lo = 0; k_lo < kGridTokens; ++k_lo) {
          for (int64_t k_hi = k_lo; k_hi < kGridTokens; ++k_hi) {
            int64_t seen = 0;
            for (int64_t q = q_lo; q <= q_hi; ++q) {
              for (int64_t k = k_lo; k <= k_hi; ++k) seen += g.Sees(q, k) ? 1 : 0;
            }
            const int64_t pairs = (q_hi - q_lo + 1) * (k_hi - k_lo + 1);
            const std::string where = g.name + " q [" + std::to_string(q_lo) + ", " +
                                      std::to_string(q_hi) + "] k [" + std::to_string(k_lo) + ", " +
                                      std::to_string(k_hi) + "]";
            ASSERT_EQ(NoneVisible(g.mask.Params(), q_lo, q_hi, k_lo, k_hi, doc_of), seen == 0)
                << where;
            ASSERT_EQ(AllVisible(g.mask.Params(), q_lo, q_hi, k_lo, k_hi, doc_of), seen == pairs)
                << where;
          }
        }
      }
    }
  }
}

// core/sequence/mask.cc counts in closed form; on every half-open rectangle of every grid its pair
// count and cut rows are the grid's.
TEST(MaskRule, PairCounterAgreesWithTheHandWrittenGrids) {
  for (const MaskGrid& g : HandWrittenGrids()) {
    const PairCounter counter(g.mask, kGridTokens);
    int64_t total = 0;
    for (int64_t q0 = 0; q0 <= kGridTokens; ++q0) {
      for (int64_t q1 = q0; q1 <= kGridTokens; ++q1) {
        for (int64_t k0 = 0; k0 <= kGridTokens; ++k0) {
          for (int64_t k1 = k0; k1 <= kGridTokens; ++k1) {
            int64_t pairs = 0, cut_rows = 0;
            for (int64_t q = q0; q < q1; ++q) {
              int64_t row = 0;
              for (int64_t k = k0; k < k1; ++k) row += g.Sees(q, k) ? 1 : 0;
              pairs += row;
              cut_rows += row > 0 && row < k1 - k0 ? 1 : 0;
            }
            const std::string where = g.name + " q [" + std::to_string(q0) + ", " +
                                      std::to_string(q1) + ") k [" + std::to_string(k0) + ", " +
                                      std::to_string(k1) + ")";
            ASSERT_EQ(counter.Count(q0, q1, k0, k1), pairs) << where;
            ASSERT_EQ(counter.CutRows(q0, q1, k0, k1), cut_rows) << where;
            if (q0 == 0 && q1 == kGridTokens && k0 == 0 && k1 == kGridTokens) total = pairs;
          }
        }
      }
    }
    EXPECT_EQ(counter.Total(), total) << g.name;
  }
}

}  // namespace
}  // namespace meshplan
