// CPU block-attention kernels (float, Eigen). One call handles one (batch, head) pair of a
// block: n_q query rows against n_k key/value rows, each row with its token position so that
// the mask piece of the block follows from the positions (every MaskKind).
// Matrices are row-major [rows x d] with an explicit row stride (elements between rows).
// Work follows the mask: a block the mask hides entirely costs nothing, one it shows entirely is
// computed densely, and a partly masked block (causal diagonal, window edge, document boundary,
// zigzag shard, prefix edge) is taken in panels of up to 128 evenly stepped query rows: the key
// tiles a whole panel sees entirely are one dense product of the panel, and the rest is split into
// sub-tiles of 32 query rows x 32 keys classified from their position ranges: invisible ones are
// skipped, visible ones computed without the per-pair mask, and only the rest masked pair by pair
// (like the GPU kernels' 64-key tiles).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/sequence/mask.h"
#include "core/sequence/mask_rule.h"

namespace meshplan::exec {

// Decides visibility of (query position, key position) pairs for a mask:
// core/sequence/mask_rule.h's rule with the document lookup it needs.
class MaskRule {
 public:
  explicit MaskRule(const Mask& mask);
  bool Visible(int64_t q, int64_t k) const {
    return meshplan::Visible(params_, q, k, DocLookup{this});
  }
  // The keys position q sees (core/sequence/mask_rule.h VisibleKeys): one document lookup per row,
  // then two comparisons per key.
  VisibleKeyRange VisibleKeys(int64_t q) const;
  // The first document start after `position` (the largest int64_t when none follows, or the
  // mask has no documents).
  int64_t NextDocumentStart(int64_t position) const;
  bool full() const { return params_.kind == MaskKind::kFull; }
  // Whether no pair / every pair of queries in [q_lo, q_hi] and keys in [k_lo, k_hi] is visible
  // (exact: see core/sequence/mask_rule.h).
  bool NoneVisible(int64_t q_lo, int64_t q_hi, int64_t k_lo, int64_t k_hi) const {
    return meshplan::NoneVisible(params_, q_lo, q_hi, k_lo, k_hi, DocLookup{this});
  }
  bool AllVisible(int64_t q_lo, int64_t q_hi, int64_t k_lo, int64_t k_hi) const {
    return meshplan::AllVisible(params_, q_lo, q_hi, k_lo, k_hi, DocLookup{this});
  }

 private:
  struct DocLookup {
    const MaskRule* rule;
    int64_t operator()(int64_t token) const { return rule->DocOf(token); }
  };
  // Number of documents that start at or before `token` (grows with the document, as the rule
  // asks).
  int64_t DocOf(int64_t token) const {
    return static_cast<int64_t>(std::upper_bound(doc_starts_.begin(), doc_starts_.end(), token) -
                                doc_starts_.begin());
  }
  MaskParams params_;
  std::vector<int64_t> doc_starts_;
  int64_t sequence_end_ = 0;  // one past the last position of the documents
};

struct RowsView {
  const float* data = nullptr;
  int64_t rows = 0;
  int64_t stride = 0;                  // elements between consecutive rows
  const int64_t* positions = nullptr;  // token position of each row
};

struct MutableRows {
  float* data = nullptr;
  int64_t rows = 0;
  int64_t stride = 0;
};

// Forward block: o = softmax(scale * q k^T restricted to visible pairs) v, normalised within the
// block, and lse = log-sum-exp of the visible scaled scores of each row (-inf for a row with no
// visible key, whose o row is 0). `o` and `lse` are overwritten.
void BlockForward(const RowsView& q, const RowsView& k, const RowsView& v, int64_t d, float scale,
                  const MaskRule& mask, MutableRows o, float* lse);

// The pairs the kernels compute for a block (positions only; BlockForward and BlockBackward tile it
// alike): every pair of the products they run (`computed`, the visible pairs and the hidden ones
// that share a product with them), and of those the ones masked pair by pair (`masked`). What the
// cost model charges them for is the visible pairs and the cut rows (core/sequence/mask.h
// PairCounter); this is what they do, for tests and benchmarks.
struct BlockWorkPairs {
  int64_t computed = 0, masked = 0;
};
BlockWorkPairs PlannedPairs(const RowsView& q, const RowsView& k, const MaskRule& mask);

// Folds a partial (o_in, lse_in) of the same rows into the accumulator (o, lse), in fp32:
// lse' = log(exp(lse) + exp(lse_in)); o = exp(lse - lse') o + exp(lse_in - lse') o_in.
void MergePartial(MutableRows o, float* lse, const float* o_in, int64_t o_in_stride,
                  const float* lse_in, int64_t d);

// Backward block with the final lse and delta = rowsum(dO * O) of the query rows: adds this
// block's contributions into dq, dk, dv (P = exp(scale s - lse) on visible pairs).
void BlockBackward(const RowsView& q, const RowsView& k, const RowsView& v, const RowsView& d_o,
                   const float* lse, const float* delta, int64_t d, float scale,
                   const MaskRule& mask, MutableRows dq, MutableRows dk, MutableRows dv);

}  // namespace meshplan::exec
