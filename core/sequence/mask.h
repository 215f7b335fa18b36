// Attention masks and exact counts of the (query, key) pairs they leave unmasked.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"
#include "core/sequence/document_sampler.h"
#include "core/sequence/mask_rule.h"

namespace meshplan {

// MaskKind and the visibility rule of each kind are in core/sequence/mask_rule.h. Query position q
// may attend to key position k when:
//   full:           always
//   causal:         k <= q
//   window W:       q - W < k <= q      (causal sliding window of W keys, including q itself)
//   documents:      k <= q and both lie in the same document (causal attention inside each
//                   document of a packed sequence; documents are consecutive and cover the
//                   whole sequence)
//   documents-full: both lie in the same document (bidirectional inside each document)
//   prefix N:       k < N or k <= q, i.e. k <= max(q, N - 1) (prefix-LM: the first N tokens
//                   see each other both ways, every later token sees everything before it)
struct Mask {
  MaskKind kind = MaskKind::kCausal;
  int64_t window = 0;                     // kWindow only, >= 1
  int64_t prefix = 0;                     // kPrefix only, >= 1 and <= the sequence length
  std::vector<int64_t> document_lengths;  // document kinds; sums to the sequence length
  std::string documents_source;           // document kinds: the file the lengths came from
  // Document kinds drawn from a distribution: document_lengths are drawn for each sequence length
  // (SetSequenceLength in core/workload/workload.h), so the mask scales with --seq.
  std::optional<DocumentSampler> sampler;

  static Mask Full() { return Of(MaskKind::kFull, 0); }
  static Mask Causal() { return Of(MaskKind::kCausal, 0); }
  static Mask Window(int64_t w) { return Of(MaskKind::kWindow, w); }
  static Mask Prefix(int64_t n);
  // Causal inside each document (kDocuments), or bidirectional (kDocumentsFull).
  static Mask Documents(std::vector<int64_t> lengths, bool bidirectional = false);

  // "full", "causal", "window:4K", "prefix:64K", "docs:FILE", "docs-full:FILE",
  // "docs-sampled:SPEC", "docs-full-sampled:SPEC" (or "docs:N documents" when built in memory).
  std::string ToString() const;
  bool IsDocuments() const { return HasDocuments(kind); }
  // What core/sequence/mask_rule.h's functions read of the mask besides its documents.
  MaskParams Params() const { return {kind, window, prefix}; }
  // Every visible pair has k <= q (full, documents-full and prefix masks let queries see later
  // keys).
  bool IsCausalFamily() const {
    return kind == MaskKind::kCausal || kind == MaskKind::kWindow || kind == MaskKind::kDocuments;
  }

 private:
  static Mask Of(MaskKind k, int64_t w) {
    Mask m;
    m.kind = k;
    m.window = w;
    return m;
  }
};

// Parses "full", "causal", "window:W" (W a count such as 4K), "prefix:N", "docs:FILE" or
// "docs-full:FILE", where FILE holds document lengths separated by whitespace, commas or newlines
// ('#' starts a comment), and "docs-sampled:SPEC" or "docs-full-sampled:SPEC" with SPEC as in
// core/sequence/document_sampler.h (the documents are drawn once the sequence length is known).
Result<Mask> ParseMask(std::string_view text);

// Draws a sampled mask's documents for seq_len tokens; any other mask is left as it is.
Status DrawDocuments(Mask* mask, int64_t seq_len);

// Reads document lengths from a file (see ParseMask). Errors name the file and the entry.
Result<std::vector<int64_t>> ReadDocumentLengths(const std::string& path);
// The same for the text of such a file; errors start with "SOURCE:LINE:" or "SOURCE:".
Result<std::vector<int64_t>> ParseDocumentLengths(std::string_view text, const std::string& source);

// Checks the mask against a sequence length (window <= seq is allowed; prefix <= seq; documents
// must sum to seq).
Status ValidateMask(const Mask& mask, int64_t seq_len);

// Precomputed helper for counting unmasked pairs in rectangles of the attention matrix.
// Counts are exact integers; every call is O(1) except documents, which is
// O(log D + documents overlapping the rectangle).
class PairCounter {
 public:
  // REQUIRES: ValidateMask(mask, seq_len).ok()
  PairCounter(const Mask& mask, int64_t seq_len);

  // Unmasked pairs with q in [q_begin, q_end) and k in [k_begin, k_end).
  int64_t Count(int64_t q_begin, int64_t q_end, int64_t k_begin, int64_t k_end) const;
  // Query rows of [q_begin, q_end) that see some but not all of the keys [k_begin, k_end): the
  // rows a cut of the mask crosses inside the rectangle (a kernel's extra work along the cut,
  // GpuSpec::cut_row_extra_pairs, is per such row). O(1), documents O(log D + documents
  // overlapping the rectangle).
  int64_t CutRows(int64_t q_begin, int64_t q_end, int64_t k_begin, int64_t k_end) const;
  // Unmasked pairs of the whole S x S matrix.
  int64_t Total() const { return Count(0, seq_len_, 0, seq_len_); }
  int64_t seq_len() const { return seq_len_; }
  const Mask& mask() const { return mask_; }

 private:
  int64_t CausalCount(int64_t q0, int64_t q1, int64_t k0, int64_t k1) const;
  Mask mask_;
  int64_t seq_len_;
  std::vector<int64_t> doc_starts_;  // doc_starts_[i] = first token of document i; back() = S
};

}  // namespace meshplan
