// The one rule of every attention mask: may query position q see key position k, and does a
// rectangle of positions hold no visible pair or only visible pairs. The CPU block kernels
// (executor/kernels/block_kernels.h), the float64 reference (executor/kernels/reference.h), the
// CUDA kernels (executor/cuda/kernels/common.cuh) and the piece split for fused attention
// (executor/kernels/attention_pieces.h) all decide visibility here; core/sequence/mask.h defines
// the masks and counts their pairs in closed form (tests check the counts against this rule).
//
// Adding a mask: its MaskKind below (before kLastMaskKind's value moves on to it), its case in
// every function of this header, its parsing and counting in core/sequence/mask.{h,cc}, and tests
// (tests/core/sequence/mask_rule_test.cc writes each rule out by hand).
//
// Plain C++ that nvcc also compiles for the device: no standard headers beyond <cstdint>, no
// exceptions, no std:: calls. Documents enter as indices from a caller-supplied lookup, so the
// host (a sorted vector, a table) and the device (an array in device memory) each keep their own.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define MESHPLAN_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define MESHPLAN_HOST_DEVICE inline
#endif

namespace meshplan {

// The values are also the masks' codes in the GPU kernels' arguments
// (executor/device/kernel_args.h).
enum class MaskKind : int32_t { kFull, kCausal, kWindow, kDocuments, kDocumentsFull, kPrefix };

// The highest MaskKind: a code above it (or below 0) is no mask.
inline constexpr MaskKind kLastMaskKind = MaskKind::kPrefix;

MESHPLAN_HOST_DEVICE bool IsMaskKind(int32_t code) {
  return code >= 0 && code <= static_cast<int32_t>(kLastMaskKind);
}

// Whether visibility depends on the documents of the positions (the lookups below are called).
MESHPLAN_HOST_DEVICE bool HasDocuments(MaskKind kind) {
  return kind == MaskKind::kDocuments || kind == MaskKind::kDocumentsFull;
}

// What the rule reads of a mask besides its documents.
struct MaskParams {
  MaskKind kind = MaskKind::kCausal;
  int64_t window = 0;  // kWindow: keys q - window < k <= q, window >= 1
  int64_t prefix = 0;  // kPrefix: the first `prefix` tokens see each other, prefix >= 1
};

namespace mask_rule_detail {
MESHPLAN_HOST_DEVICE int64_t Max(int64_t a, int64_t b) { return a > b ? a : b; }
MESHPLAN_HOST_DEVICE int64_t Min(int64_t a, int64_t b) { return a < b ? a : b; }
}  // namespace mask_rule_detail

// Query position q may see key position k when:
//   full:           always
//   causal:         k <= q
//   window W:       q - W < k <= q      (causal sliding window of W keys, including q itself)
//   documents:      k <= q and both lie in the same document
//   documents-full: both lie in the same document
//   prefix N:       k <= max(q, N - 1)  (k < N or k <= q)
// q_doc and k_doc are the document indices of q and k, read by the document kinds only (any
// value will do for the others).
MESHPLAN_HOST_DEVICE bool VisibleInDocuments(const MaskParams& m, int64_t q, int64_t k,
                                             int64_t q_doc, int64_t k_doc) {
  switch (m.kind) {
    case MaskKind::kFull:
      return true;
    case MaskKind::kCausal:
      return k <= q;
    case MaskKind::kWindow:
      return k <= q && q - k < m.window;
    case MaskKind::kDocuments:
      return k <= q && q_doc == k_doc;
    case MaskKind::kDocumentsFull:
      return q_doc == k_doc;
    case MaskKind::kPrefix:
      return k <= mask_rule_detail::Max(q, m.prefix - 1);
  }
  return false;
}

// The same, with doc_of(position) giving a document index (any index that grows with the
// document will do); called only for the document kinds.
template <typename DocOf>
MESHPLAN_HOST_DEVICE bool Visible(const MaskParams& m, int64_t q, int64_t k, const DocOf& doc_of) {
  if (!HasDocuments(m.kind)) return VisibleInDocuments(m, q, k, 0, 0);
  return VisibleInDocuments(m, q, k, doc_of(q), doc_of(k));
}

// The keys query position q sees, as one inclusive range of positions [first, last]: every mask
// here shows a row one contiguous range of keys (a key k is visible exactly when first <= k <=
// last). doc_first and doc_last are the first and last positions of q's document, read by the
// document kinds only. For kernels that test many keys of one row: two comparisons per key
// instead of a document lookup per key (tests/core/sequence/mask_rule_test.cc checks it against
// Visible on every hand-written grid).
struct VisibleKeyRange {
  int64_t first = 0, last = 0;
  MESHPLAN_HOST_DEVICE bool Contains(int64_t k) const { return first <= k && k <= last; }
};

MESHPLAN_HOST_DEVICE VisibleKeyRange VisibleKeys(const MaskParams& m, int64_t q, int64_t doc_first,
                                                 int64_t doc_last) {
  // Beyond every position (positions are tokens of one sequence, far below 2^62).
  constexpr int64_t kUnbounded = int64_t{1} << 62;
  switch (m.kind) {
    case MaskKind::kFull:
      return {-kUnbounded, kUnbounded};
    case MaskKind::kCausal:
      return {-kUnbounded, q};
    case MaskKind::kWindow:
      return {q - m.window + 1, q};
    case MaskKind::kDocuments:
      return {doc_first, q};
    case MaskKind::kDocumentsFull:
      return {doc_first, doc_last};
    case MaskKind::kPrefix:
      return {-kUnbounded, mask_rule_detail::Max(q, m.prefix - 1)};
  }
  return {1, 0};
}

// Whether no pair / every pair of queries [q_lo, q_hi] and keys [k_lo, k_hi] (inclusive ranges
// of positions) is visible. Exact for every mask here: the rectangle's most visible pair decides
// NoneVisible and its least visible pair AllVisible. Causal family: the most visible pair is
// (q_hi, k_lo); the least is (q_lo, k_hi) for the k <= q test and (q_hi, k_lo) for the window's
// distance. Documents (contiguous, in order): a key range entirely in earlier (or later)
// documents than the query range hides everything, one document holding both ranges shows
// everything. Only a rectangle that is neither needs the pair-by-pair rule.
template <typename DocOf>
MESHPLAN_HOST_DEVICE bool NoneVisible(const MaskParams& m, int64_t q_lo, int64_t q_hi, int64_t k_lo,
                                      int64_t k_hi, const DocOf& doc_of) {
  switch (m.kind) {
    case MaskKind::kFull:
      return false;
    case MaskKind::kCausal:
      return k_lo > q_hi;
    case MaskKind::kWindow:
      return k_lo > q_hi || q_lo - k_hi >= m.window;
    case MaskKind::kDocuments:
      return k_lo > q_hi || doc_of(k_hi) < doc_of(q_lo);
    case MaskKind::kDocumentsFull:
      return doc_of(k_hi) < doc_of(q_lo) || doc_of(k_lo) > doc_of(q_hi);
    case MaskKind::kPrefix:
      return k_lo > mask_rule_detail::Max(q_hi, m.prefix - 1);
  }
  return false;
}

template <typename DocOf>
MESHPLAN_HOST_DEVICE bool AllVisible(const MaskParams& m, int64_t q_lo, int64_t q_hi, int64_t k_lo,
                                     int64_t k_hi, const DocOf& doc_of) {
  switch (m.kind) {
    case MaskKind::kFull:
      return true;
    case MaskKind::kCausal:
      return k_hi <= q_lo;
    case MaskKind::kWindow:
      return k_hi <= q_lo && q_hi - k_lo < m.window;
    case MaskKind::kDocuments:
      return k_hi <= q_lo && doc_of(k_lo) == doc_of(q_hi);
    case MaskKind::kDocumentsFull:
      return doc_of(mask_rule_detail::Min(q_lo, k_lo)) == doc_of(mask_rule_detail::Max(q_hi, k_hi));
    case MaskKind::kPrefix:
      return k_hi <= mask_rule_detail::Max(q_lo, m.prefix - 1);
  }
  return false;
}

}  // namespace meshplan
