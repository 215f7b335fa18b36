// Splitting a block of attention into pieces that a fused attention library (cuDNN's SDPA) can
// compute exactly. A block is Q rows against K rows, each row carrying its token position, under
// the workload's mask; fused kernels only know a full rectangle or a causal triangle aligned to a
// corner. A piece is a run of consecutive Q rows against a run of consecutive K rows whose token
// positions go up by one common step (1 for contiguous and zigzag shards, the stripe count for
// striped ones), with one of those masks on row offsets; the pieces of a block cover every
// visible (query, key) pair exactly once and no hidden pair. Host code, no CUDA.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/mask_rule.h"

namespace meshplan::exec {

enum class PieceMask : uint8_t {
  kFull,               // every pair visible
  kCausalTopLeft,      // key j visible to query i iff j <= i (rows and keys from the piece's start)
  kCausalBottomRight,  // key j visible to query i iff j <= i + (k_rows - q_rows); k_rows >= q_rows
};

struct AttentionPiece {
  int64_t q_row0 = 0, q_rows = 0;  // rows of the block's Q (indices into q_positions)
  int64_t k_row0 = 0, k_rows = 0;  // rows of the block's K
  PieceMask mask = PieceMask::kFull;
};

// The pieces of the block, or nullopt when it cannot be split into at most `max_pieces`: a mask
// other than full (one piece, whatever the positions) or causal (key position <= query position;
// core/mask_rule.h), or causal positions that break into too many runs of consecutive positions
// and are not one progression of a common step on both sides either (a striped block is: its
// queries q0 + s i see keys k0 + s j iff j <= i + floor((q0 - k0) / s), one or two pieces). An
// empty vector means nothing in the block is visible.
std::optional<std::vector<AttentionPiece>> SplitIntoPieces(const std::vector<int64_t>& q_positions,
                                                           const std::vector<int64_t>& k_positions,
                                                           MaskKind mask_kind, int32_t max_pieces);

}  // namespace meshplan::exec
