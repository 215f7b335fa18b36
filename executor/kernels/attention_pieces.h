// Splitting a block of attention into pieces that a fused attention library (cuDNN's SDPA) can
// compute exactly. A block is Q rows against K rows, each row carrying its token position, under
// the workload's mask; fused kernels only know a full rectangle, a causal triangle aligned to a
// corner, or a diagonal band. A piece is a run of consecutive Q rows against a run of consecutive
// K rows whose token positions go up by one common step (1 for contiguous and zigzag shards, the
// stripe count for striped ones), with one of those masks on row offsets; the pieces of a block
// cover every visible (query, key) pair exactly once and no hidden pair. Document masks are split
// the same way once every run is cut at the document starts (no ragged or padded layout is
// needed: a piece never crosses a document boundary). Host code, no CUDA.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/sequence/mask_rule.h"

namespace meshplan::exec {

enum class PieceMask : uint8_t {
  kFull,               // every pair visible
  kCausalTopLeft,      // key j visible to query i iff j <= i (rows and keys from the piece's start)
  kCausalBottomRight,  // key j visible to query i iff j <= i + (k_rows - q_rows); k_rows >= q_rows
  kBand,               // key j visible to query i iff i + band_offset - band_width < j
                       //                              <= i + band_offset (AttentionPiece)
};

struct AttentionPiece {
  int64_t q_row0 = 0, q_rows = 0;  // rows of the block's Q (indices into q_positions)
  int64_t k_row0 = 0, k_rows = 0;  // rows of the block's K
  PieceMask mask = PieceMask::kFull;
  // kBand only (0 otherwise): the band of band_width keys ending band_offset keys right of the
  // diagonal j = i. A band piece always has q_rows <= k_rows, band_width >= 1 and
  // 0 <= band_offset <= band_width - 1, and its last query row does not see key 0 (the band's
  // lower edge cuts the piece; otherwise the piece would be full or causal). Those bounds are what
  // a diagonal band mask with a left bound needs (executor/cuda/cudnn_attention.cc).
  int64_t band_offset = 0, band_width = 0;
};

// The pieces of the block, or nullopt when it cannot be split into at most `max_pieces`:
// - full: one piece, whatever the positions;
// - causal (key position <= query position; core/sequence/mask_rule.h): per (query run, key run)
// pair of
//   runs of consecutive positions, nothing, a full rectangle, a top-left triangle, or a
//   bottom-right triangle and a full rectangle;
// - window W (query position q sees key position k iff q - W < k <= q): per run pair, nothing, a
//   full rectangle, the causal pieces above (the window's lower edge misses the pair), one band,
//   or, when the pair has more visible query rows than keys, the causal pieces of the rows whose
//   window reaches back to the pair's first key and one band for the rest (at most 3);
// - documents and documents-full (core/sequence/mask_rule.h): with the document starts (the
// overload
//   below), each run is cut at the document starts inside it; per (query run, key run) pair of
//   those cut runs, nothing when they lie in different documents, else one full rectangle
//   (documents-full) or the causal pieces above (documents). Without document starts: nullopt;
// - any other mask (prefix), or a window of width < 1: nullopt.
// Causal, window and document positions that break into more than `max_pieces` runs of
// consecutive positions may still be one progression of a common step s on both sides (a striped
// block: its queries q0 + s i see keys k0 + s j iff j <= i + floor((q0 - k0) / s), and under a
// window also j > i + floor((q0 - k0 - W) / s): the same split on row indices; documents cut each
// progression at the document starts into progressions of the same step); otherwise nullopt. An
// empty vector means nothing in the block is visible. nullopt also when the pieces would be more
// than `max_pieces` (a block over many short documents has a piece per document).
std::optional<std::vector<AttentionPiece>> SplitIntoPieces(const std::vector<int64_t>& q_positions,
                                                           const std::vector<int64_t>& k_positions,
                                                           const MaskParams& mask,
                                                           int32_t max_pieces);

// The same with the document starts of a document mask: the first position of each document,
// ascending, doc_starts[0] == 0 (DeviceMask's convention, executor/device/kernel_args.h: document
// d holds positions doc_starts[d] to doc_starts[d + 1] - 1, the last one every position from its
// start on). Read only for the document kinds, which need a non-empty doc_starts starting at 0
// and positions >= 0 (else nullopt). Cost: a binary search in doc_starts per cut run, and a step
// per pair of cut runs in one document (never a pair across documents).
std::optional<std::vector<AttentionPiece>> SplitIntoPieces(const std::vector<int64_t>& q_positions,
                                                           const std::vector<int64_t>& k_positions,
                                                           const MaskParams& mask,
                                                           std::span<const int64_t> doc_starts,
                                                           int32_t max_pieces);

// The same for a mask without parameters (full, causal); a window needs its width and documents
// their starts, so MaskKind::kWindow here is a window of width 0 and the document kinds have no
// documents: nullopt.
std::optional<std::vector<AttentionPiece>> SplitIntoPieces(const std::vector<int64_t>& q_positions,
                                                           const std::vector<int64_t>& k_positions,
                                                           MaskKind mask_kind, int32_t max_pieces);

// Rows [src_row0, src_row0 + rows) of a view copied to rows [dst_row0, dst_row0 + rows) of a
// gathered buffer.
struct RowRun {
  int64_t src_row0 = 0, dst_row0 = 0, rows = 0;
};

// A block computed on its rows gathered into position order: a whole sequence that the all-to-all
// schemes or a gather of K, V hold in zigzag (or striped) order is, sorted, one run of positions,
// which a causal mask covers with one piece where the rows as they lie need a piece per pair of
// chunks (136 for 8 zigzag ranks). The Q rows and the K rows are each gathered by their runs
// (every row of the block exactly once, the destinations in ascending position order, ties in
// row order), the pieces index the gathered rows, and a device computes them there and scatters
// the results back by the same runs.
struct OrderedSplit {
  std::vector<RowRun> q_runs, k_runs;
  std::vector<AttentionPiece> pieces;
};

// The ordered split of the block, or nullopt when it would not help or cannot be had: both sides
// already in position order or a side without rows (SplitIntoPieces says all there is), more than
// `max_runs` runs on a side, or more than `max_pieces` pieces on the gathered rows (what
// SplitIntoPieces returns for the sorted positions; nullopt there is nullopt here). Cost: a sort of
// each side.
std::optional<OrderedSplit> SplitInPositionOrder(const std::vector<int64_t>& q_positions,
                                                 const std::vector<int64_t>& k_positions,
                                                 const MaskParams& mask,
                                                 std::span<const int64_t> doc_starts,
                                                 int32_t max_pieces, int32_t max_runs);

}  // namespace meshplan::exec
