// The CPU block kernels (executor/kernels/block_kernels.h) on blocks that the kernels split into
// sub-tiles: 200 tokens (not a multiple of the sub-tile), rows in non-monotone orders (zigzag
// shards, descending), and key sets that leave some query rows, and some whole sub-tiles, with no
// visible key. Expected values come from the double-precision reference
// (executor/kernels/reference.h): the blocks of one query set against a partition of the keys,
// merged (forward) or summed (backward), must reproduce the reference's O, LSE, dQ, dK and dV.
#include "executor/kernels/block_kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <ostream>
#include <string>
#include <vector>

#include "executor/kernels/reference.h"

namespace meshplan::exec {
namespace {

constexpr int64_t kSeq = 200;
constexpr int64_t kDim = 16;
constexpr double kTolerance = 1e-4;  // fp32 kernels against the double reference, as elsewhere

Workload MakeWorkload(Mask mask) {
  Workload w;
  w.batch = 1;
  w.seq_len = kSeq;
  w.q_heads = 1;
  w.kv_heads = 1;
  w.head_dim = kDim;
  w.mask = std::move(mask);
  EXPECT_TRUE(w.Validate().ok()) << w.Validate().message();
  return w;
}

// Zigzag shards of 8 chunks of 25 tokens for 4 ranks, concatenated rank by rank:
// chunks 0, 7, 1, 6, 2, 5, 3, 4 (non-monotone; chunk edges are not sub-tile edges).
std::vector<int64_t> ZigzagOrder() {
  constexpr int64_t kChunks = 8, kChunk = kSeq / kChunks;
  std::vector<int64_t> order;
  for (int64_t r = 0; r < kChunks / 2; ++r) {
    for (int64_t c : {r, kChunks - 1 - r}) {
      for (int64_t i = 0; i < kChunk; ++i) order.push_back(c * kChunk + i);
    }
  }
  return order;
}

std::vector<int64_t> DescendingOrder() {
  std::vector<int64_t> order(kSeq);
  std::iota(order.rbegin(), order.rend(), 0);
  return order;
}

// Rows of a [tokens x kDim] fp32 copy of a reference tensor (one head), gathered in `order`.
std::vector<float> Gather(const TensorD& t, const std::vector<int64_t>& order) {
  std::vector<float> out;
  for (int64_t pos : order) {
    for (int64_t e = 0; e < t.dim; ++e) out.push_back(static_cast<float>(t.at(0, pos, 0, e)));
  }
  return out;
}

// Visibility straight from the mask's definition (core/sequence/mask.h), independent of MaskRule.
bool Visible(const Mask& mask, int64_t q, int64_t k) {
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
        const bool q_in = q >= start && q < start + length, k_in = k >= start && k < start + length;
        if (q_in || k_in) return q_in && k_in && (k <= q || mask.kind == MaskKind::kDocumentsFull);
        start += length;
      }
      return false;
    }
    case MaskKind::kPrefix:
      return k < mask.prefix || k <= q;
  }
  return false;
}

struct TilingCase {
  std::string name;
  Mask mask;
  std::vector<int64_t> order;  // query rows; the keys are its first and second halves
};

void PrintTo(const TilingCase& c, std::ostream* os) { *os << c.name; }

std::vector<TilingCase> TilingCases() {
  std::vector<TilingCase> cases;
  const std::vector<std::pair<std::string, Mask>> masks = {
      {"full", Mask::Full()},
      {"causal", Mask::Causal()},
      {"window37", Mask::Window(37)},
      {"documents", Mask::Documents({70, 55, 75})},
      {"documents_full", Mask::Documents({70, 55, 75}, true)},
      {"prefix90", Mask::Prefix(90)},
  };
  for (const auto& [name, mask] : masks) {
    cases.push_back({name + "/zigzag", mask, ZigzagOrder()});
    cases.push_back({name + "/descending", mask, DescendingOrder()});
  }
  return cases;
}

// Query block: every token in `order`. Key blocks: the first and the second half of `order`
// (with zigzag, ranks 0-1's shards and ranks 2-3's). Each half leaves some rows without a
// visible key under the causal masks, which must come out as O = 0, LSE = -inf.
class BlockKernelsTilingTest : public ::testing::TestWithParam<TilingCase> {};

TEST_P(BlockKernelsTilingTest, MatchesReference) {
  const TilingCase& c = GetParam();
  const Workload w = MakeWorkload(c.mask);
  AttentionTensors<double> ref = RandomInputs(w, 11);
  ReferenceForward(w, ref);
  ReferenceBackward(w, ref);

  const std::vector<int64_t>& order = c.order;
  const std::vector<int64_t> halves[2] = {{order.begin(), order.begin() + kSeq / 2},
                                          {order.begin() + kSeq / 2, order.end()}};
  const std::vector<float> q = Gather(ref.q, order), d_o = Gather(ref.d_o, order);
  const float scale = 1.0f / std::sqrt(static_cast<float>(kDim));
  const MaskRule rule(c.mask);
  const RowsView q_rows{q.data(), kSeq, kDim, order.data()};
  const RowsView do_rows{d_o.data(), kSeq, kDim, order.data()};

  // Forward: one block per key half, merged.
  std::vector<float> o(kSeq * kDim), lse(kSeq, -std::numeric_limits<float>::infinity());
  std::vector<float> part(kSeq * kDim), part_lse(kSeq);
  for (const std::vector<int64_t>& keys : halves) {
    const std::vector<float> k = Gather(ref.k, keys), v = Gather(ref.v, keys);
    const int64_t nk = static_cast<int64_t>(keys.size());
    BlockForward(q_rows, {k.data(), nk, kDim, keys.data()}, {v.data(), nk, kDim, keys.data()}, kDim,
                 scale, rule, {part.data(), kSeq, kDim}, part_lse.data());
    for (int64_t i = 0; i < kSeq; ++i) {
      const bool sees_any = std::any_of(keys.begin(), keys.end(),
                                        [&](int64_t kp) { return Visible(c.mask, order[i], kp); });
      if (!sees_any) {
        EXPECT_EQ(part_lse[i], -std::numeric_limits<float>::infinity())
            << "row at position " << order[i];
        for (int64_t e = 0; e < kDim; ++e)
          ASSERT_EQ(part[i * kDim + e], 0.0f) << "row at position " << order[i];
      }
    }
    MergePartial({o.data(), kSeq, kDim}, lse.data(), part.data(), kDim, part_lse.data(), kDim);
  }
  for (int64_t i = 0; i < kSeq; ++i) {
    const int64_t pos = order[i];
    EXPECT_NEAR(lse[i], ref.lse.at(0, pos, 0, 0),
                kTolerance * std::max(1.0, std::abs(ref.lse.at(0, pos, 0, 0))))
        << "position " << pos;
    for (int64_t e = 0; e < kDim; ++e) {
      ASSERT_NEAR(o[i * kDim + e], ref.o.at(0, pos, 0, e), kTolerance)
          << "position " << pos << " e " << e;
    }
  }

  // Backward with the reference's final LSE and D = rowsum(dO * O): the key halves' blocks add up
  // to the full gradients.
  std::vector<float> final_lse(kSeq), delta(kSeq);
  for (int64_t i = 0; i < kSeq; ++i) {
    final_lse[i] = static_cast<float>(ref.lse.at(0, order[i], 0, 0));
    double sum = 0;
    for (int64_t e = 0; e < kDim; ++e)
      sum += ref.d_o.at(0, order[i], 0, e) * ref.o.at(0, order[i], 0, e);
    delta[i] = static_cast<float>(sum);
  }
  std::vector<float> dq(kSeq * kDim, 0.0f);
  for (const std::vector<int64_t>& keys : halves) {
    const std::vector<float> k = Gather(ref.k, keys), v = Gather(ref.v, keys);
    const int64_t nk = static_cast<int64_t>(keys.size());
    std::vector<float> dk(k.size(), 0.0f), dv(v.size(), 0.0f);
    BlockBackward(q_rows, {k.data(), nk, kDim, keys.data()}, {v.data(), nk, kDim, keys.data()},
                  do_rows, final_lse.data(), delta.data(), kDim, scale, rule,
                  {dq.data(), kSeq, kDim}, {dk.data(), nk, kDim}, {dv.data(), nk, kDim});
    // Every query row is in this block, so each key's dK and dV are complete.
    for (int64_t j = 0; j < nk; ++j) {
      for (int64_t e = 0; e < kDim; ++e) {
        ASSERT_NEAR(dk[j * kDim + e], ref.dk.at(0, keys[j], 0, e), kTolerance)
            << "key " << keys[j] << " e " << e;
        ASSERT_NEAR(dv[j * kDim + e], ref.dv.at(0, keys[j], 0, e), kTolerance)
            << "key " << keys[j] << " e " << e;
      }
    }
  }
  for (int64_t i = 0; i < kSeq; ++i) {
    for (int64_t e = 0; e < kDim; ++e) {
      ASSERT_NEAR(dq[i * kDim + e], ref.dq.at(0, order[i], 0, e), kTolerance)
          << "position " << order[i] << " e " << e;
    }
  }
}

// One block, query rows `rows` (positions, any order) against key rows `keys` (ascending), through
// BlockForward and then BlockBackward with the reference's final LSE and D = rowsum(dO * O): when
// every key a query row sees is in the block (checked by the callers' choice of keys), O, LSE and
// dQ are the reference's; when moreover every query is in the block, so are dK and dV.
void ExpectWholeBlockMatchesReference(const Workload& w, const AttentionTensors<double>& ref,
                                      const std::vector<int64_t>& rows,
                                      const std::vector<int64_t>& keys, bool every_query) {
  const int64_t nq = static_cast<int64_t>(rows.size()), nk = static_cast<int64_t>(keys.size()),
                d = w.head_dim;
  const std::vector<float> q = Gather(ref.q, rows), d_o = Gather(ref.d_o, rows);
  const std::vector<float> k = Gather(ref.k, keys), v = Gather(ref.v, keys);
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  const MaskRule rule(w.mask);
  const RowsView q_rows{q.data(), nq, d, rows.data()}, do_rows{d_o.data(), nq, d, rows.data()};
  const RowsView k_rows{k.data(), nk, d, keys.data()}, v_rows{v.data(), nk, d, keys.data()};
  std::vector<float> o(nq * d), lse(nq);
  BlockForward(q_rows, k_rows, v_rows, d, scale, rule, {o.data(), nq, d}, lse.data());
  std::vector<float> final_lse(nq), delta(nq), dq(nq * d, 0.0f), dk(k.size(), 0.0f),
      dv(v.size(), 0.0f);
  for (int64_t i = 0; i < nq; ++i) {
    const int64_t pos = rows[i];
    ASSERT_NEAR(lse[i], ref.lse.at(0, pos, 0, 0),
                kTolerance * std::max(1.0, std::abs(ref.lse.at(0, pos, 0, 0))))
        << "position " << pos;
    for (int64_t e = 0; e < d; ++e)
      ASSERT_NEAR(o[i * d + e], ref.o.at(0, pos, 0, e), kTolerance) << pos << " " << e;
    final_lse[i] = static_cast<float>(ref.lse.at(0, pos, 0, 0));
    double sum = 0;
    for (int64_t e = 0; e < d; ++e) sum += ref.d_o.at(0, pos, 0, e) * ref.o.at(0, pos, 0, e);
    delta[i] = static_cast<float>(sum);
  }
  BlockBackward(q_rows, k_rows, v_rows, do_rows, final_lse.data(), delta.data(), d, scale, rule,
                {dq.data(), nq, d}, {dk.data(), nk, d}, {dv.data(), nk, d});
  for (int64_t i = 0; i < nq; ++i) {
    for (int64_t e = 0; e < d; ++e)
      ASSERT_NEAR(dq[i * d + e], ref.dq.at(0, rows[i], 0, e), kTolerance) << rows[i];
  }
  if (!every_query) return;
  for (int64_t j = 0; j < nk; ++j) {
    for (int64_t e = 0; e < d; ++e) {
      ASSERT_NEAR(dk[j * d + e], ref.dk.at(0, keys[j], 0, e), kTolerance) << "key " << keys[j];
      ASSERT_NEAR(dv[j * d + e], ref.dv.at(0, keys[j], 0, e), kTolerance) << "key " << keys[j];
    }
  }
}

// A fully visible block with many keys is computed in row bands of at most 2^20 scores (the
// per-thread scratch stays bounded): 600 query rows against 4200 keys make bands of
// max(32, 2^20 / 4200) = 249 rows: 249, 249 and 102. Every row sees every key, so O, LSE and dQ
// of the block are the reference's for those rows.
TEST(BlockKernelsBands, AFullBlockInRowBandsMatchesReference) {
  constexpr int64_t kKeys = 4200, kRows = 600, kD = 8;
  Workload w = MakeWorkload(Mask::Full());
  w.seq_len = kKeys;
  w.head_dim = kD;
  AttentionTensors<double> ref = RandomInputs(w, 5);
  ReferenceForward(w, ref);
  ReferenceBackward(w, ref);
  std::vector<int64_t> rows(kRows), keys(kKeys);
  std::iota(rows.begin(), rows.end(), 0);
  std::iota(keys.begin(), keys.end(), 0);
  ExpectWholeBlockMatchesReference(w, ref, rows, keys, /*every_query=*/false);
}

// Query panels (block_kernels.cc): a partly masked block's rows are taken in panels of up to 128
// evenly stepped rows; the key tiles a whole panel sees entirely are one product of the panel, and
// the rows then fold the rest of their keys in per 32-row tile (forward: a merge of partials). A
// 640-token block against all 640 keys, rows ascending (panels of 128 whose earlier keys are
// shared, e.g. rows [128, 256) share keys [0, 128)), in 4 stripes of step 4 (shards of 160
// concatenated: panels of 128 and 32 rows), and as zigzag chunks of 160 (0, 3, 1, 2: panels cut at
// the chunk edges), under every partly masking mask: O, LSE, dQ, dK and dV must be the double
// reference's. The keys come ascending, striped and as zigzag chunks too. Document starts inside a
// key tile split it where the keys' positions increase, and end a panel (starts at 300 and 500:
// 300 = 9 x 32 + 12 splits the tile of keys [288, 320) and ends the panel [256, 384) at row 300;
// the short documents below put several starts, and one-token documents, in one tile).
TEST(BlockKernelsPanels, SharedKeysAndPerTileKeysMatchReference) {
  constexpr int64_t kTokens = 640, kD = 8;
  std::vector<int64_t> ascending(kTokens), striped, zigzag;
  std::iota(ascending.begin(), ascending.end(), 0);
  for (int64_t r = 0; r < 4; ++r) {
    for (int64_t m = 0; m < kTokens / 4; ++m) striped.push_back(r + 4 * m);
  }
  for (int64_t c : {0, 3, 1, 2}) {
    for (int64_t i = 0; i < kTokens / 4; ++i) zigzag.push_back(c * (kTokens / 4) + i);
  }
  const std::vector<std::pair<std::string, Mask>> masks = {
      {"causal", Mask::Causal()},
      {"window150", Mask::Window(150)},
      {"documents", Mask::Documents({300, 200, 140})},
      {"documents_full", Mask::Documents({300, 200, 140}, true)},
      {"short_documents", Mask::Documents({37, 5, 1, 90, 1, 150, 356})},
      {"short_documents_full", Mask::Documents({37, 5, 1, 90, 1, 150, 356}, true)},
      {"prefix200", Mask::Prefix(200)},
  };
  for (const auto& [mask_name, mask] : masks) {
    Workload w;
    w.batch = 1;
    w.seq_len = kTokens;
    w.q_heads = 1;
    w.kv_heads = 1;
    w.head_dim = kD;
    w.mask = mask;
    ASSERT_TRUE(w.Validate().ok()) << w.Validate().message();
    AttentionTensors<double> ref = RandomInputs(w, 7);
    ReferenceForward(w, ref);
    ReferenceBackward(w, ref);
    const std::vector<std::pair<std::string, std::vector<int64_t>>> orders = {
        {"ascending", ascending}, {"striped", striped}, {"zigzag", zigzag}};
    for (const auto& [order_name, order] : orders) {
      for (const auto& [key_order_name, key_order] : orders) {
        SCOPED_TRACE(mask_name + " rows " + order_name + " keys " + key_order_name);
        ExpectWholeBlockMatchesReference(w, ref, order, key_order, /*every_query=*/true);
      }
    }
  }
}

// Tiles and panels stay inside a chunk. 256 tokens as 4 chunks of 64 in the order 0, 2, 1, 3
// (rows 0-63 hold positions 0-63, rows 64-127 positions 128-191, rows 128-191 positions 64-127,
// rows 192-255 positions 192-255), documents of 100, 60 and 96 tokens seen whole within each
// (documents_full: starts at 100 and 160). Position 100 is row 164: a key tile or query panel
// restarted there and running 32 rows would take rows 164-195, positions 100-127 and 192-195,
// two documents across the jump at row 192, and be masked pair by pair. Cut at the jump, every
// tile and panel lies in one document (the starts split them; 160 is row 96, a tile edge), so the
// kernels compute exactly the visible pairs, 100^2 + 60^2 + 96^2 = 22816, and mask none: as many
// as the same block in position order.
TEST(BlockKernelsPanels, TilesAndPanelsEndWherePositionsJump) {
  const MaskRule rule(Mask::Documents({100, 60, 96}, true));
  std::vector<int64_t> chunked, ascending(256);
  for (int64_t c : {0, 2, 1, 3}) {
    for (int64_t i = 0; i < 64; ++i) chunked.push_back(c * 64 + i);
  }
  std::iota(ascending.begin(), ascending.end(), 0);
  std::vector<float> data(256, 0.0f);  // positions only: the plan reads no values
  for (const std::vector<int64_t>* order : {&chunked, &ascending}) {
    const RowsView rows{data.data(), 256, 0, order->data()};
    const BlockWorkPairs work = PlannedPairs(rows, rows, rule);
    EXPECT_EQ(work.computed, 100 * 100 + 60 * 60 + 96 * 96);
    EXPECT_EQ(work.masked, 0);
  }
}

// MaskRule's range claims against every pair of the range: NoneVisible and AllVisible must be
// right (the kernels skip or take whole sub-tiles on them) and, on contiguous ranges, exact (else
// work the model charges as skipped would be computed pair by pair).
TEST(MaskRuleRanges, ClaimsAreExactOnEveryRectangleOfASmallSequence) {
  constexpr int64_t kS = 24;
  const std::vector<Mask> masks = {Mask::Full(),
                                   Mask::Causal(),
                                   Mask::Window(5),
                                   Mask::Documents({7, 1, 9, 7}),
                                   Mask::Documents({7, 1, 9, 7}, true),
                                   Mask::Prefix(6),
                                   Mask::Prefix(1),
                                   Mask::Prefix(kS)};
  for (const Mask& mask : masks) {
    const MaskRule rule(mask);
    const ReferenceVisibility reference(mask, kS);
    for (int64_t q_lo = 0; q_lo < kS; q_lo += 1) {
      for (int64_t q_hi = q_lo; q_hi < kS; q_hi += 3) {
        for (int64_t k_lo = 0; k_lo < kS; k_lo += 1) {
          for (int64_t k_hi = k_lo; k_hi < kS; k_hi += 2) {
            int64_t visible = 0;
            for (int64_t q = q_lo; q <= q_hi; ++q) {
              for (int64_t k = k_lo; k <= k_hi; ++k) visible += reference(q, k) ? 1 : 0;
            }
            const int64_t pairs = (q_hi - q_lo + 1) * (k_hi - k_lo + 1);
            ASSERT_EQ(rule.NoneVisible(q_lo, q_hi, k_lo, k_hi), visible == 0)
                << mask.ToString() << " q [" << q_lo << ", " << q_hi << "] k [" << k_lo << ", "
                << k_hi << "]";
            ASSERT_EQ(rule.AllVisible(q_lo, q_hi, k_lo, k_hi), visible == pairs)
                << mask.ToString() << " q [" << q_lo << ", " << q_hi << "] k [" << k_lo << ", "
                << k_hi << "]";
          }
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Masks, BlockKernelsTilingTest, ::testing::ValuesIn(TilingCases()),
                         [](const ::testing::TestParamInfo<TilingCase>& info) {
                           std::string name = info.param.name;
                           std::replace(name.begin(), name.end(), '/', '_');
                           return name;
                         });

}  // namespace
}  // namespace meshplan::exec
