// Attention masks and exact counts of the (query, key) pairs they leave unmasked.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace meshplan {

enum class MaskKind { kFull, kCausal, kWindow, kDocuments };

// Query position q may attend to key position k when:
//   full:      always
//   causal:    k <= q
//   window W:  q - W < k <= q           (causal sliding window of W keys, including q itself)
//   documents: k <= q and both lie in the same document (causal attention inside each document
//              of a packed sequence; documents are consecutive and cover the whole sequence).
struct Mask {
  MaskKind kind = MaskKind::kCausal;
  int64_t window = 0;                     // kWindow only, >= 1
  std::vector<int64_t> document_lengths;  // kDocuments only; sums to the sequence length
  std::string documents_source;           // kDocuments: the file the lengths came from

  static Mask Full() { return Of(MaskKind::kFull, 0); }
  static Mask Causal() { return Of(MaskKind::kCausal, 0); }
  static Mask Window(int64_t w) { return Of(MaskKind::kWindow, w); }
  static Mask Documents(std::vector<int64_t> lengths);

  // "full", "causal", "window:4096", "docs:FILE" (or "docs:N docs" when built in memory).
  std::string ToString() const;
  bool IsCausalFamily() const { return kind != MaskKind::kFull; }

 private:
  static Mask Of(MaskKind k, int64_t w) {
    Mask m;
    m.kind = k;
    m.window = w;
    return m;
  }
};

// Parses "full", "causal", "window:W" (W a count such as 4K) or "docs:FILE", where FILE holds
// document lengths separated by whitespace, commas or newlines ('#' starts a comment).
Result<Mask> ParseMask(std::string_view text);

// Reads document lengths from a file (see ParseMask). Errors name the file and the entry.
Result<std::vector<int64_t>> ReadDocumentLengths(const std::string& path);
// The same for the text of such a file; errors start with "SOURCE:LINE:" or "SOURCE:".
Result<std::vector<int64_t>> ParseDocumentLengths(std::string_view text, const std::string& source);

// Checks the mask against a sequence length (window <= seq is allowed; documents must sum to seq).
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
