// Packed documents cost an attention kernel whole tiles (issue 46 item 2): a FlashAttention-style
// kernel cuts each document's query rows and keys into tiles of the library's shape (query rows x
// keys a CTA computes per step of its loop) and computes every tile that holds one visible pair
// in full, so a document shorter than a tile costs a whole one. On a doc-zigzag layout (each
// document in 2 x N chunks, TransformerEngine's THD split) with many GPUs the chunks are a few
// tokens: most of each tile is padding. The fraction of the computed pair slots that are visible
// pairs (the tile fill) scales the kernel's rate (KernelShape::forward_tile_fill); the curve
// stays the rate of full tiles. docs/planner-model.md, "Document tiles".
#pragma once

#include <cstdint>

#include "core/cluster/topology.h"
#include "core/sequence/layout.h"

namespace meshplan {

// KernelCalls (core/sequence/layout.h): how a scheme's kernels meet the documents.

// Query rows x keys of one tile of a kernel's loop.
struct AttentionTile {
  int64_t queries = 0;
  int64_t keys = 0;
};

// Tiles a kernel computes on `queries` rows against `keys` keys: ceil(q / tq) x ceil(k / tk) for
// a dense call; under a bottom-right causal mask (row j sees keys [0, keys - queries + j], keys >=
// queries) the tile pairs holding a visible pair: query tile i reaches key
// keys - queries + min((i + 1) tq, queries) - 1, so sum over i of ceil((keys - queries +
// min((i + 1) tq, queries)) / tk). The same tiles whichever side the kernel's CTAs are cut on
// (forward: query tiles; backward: key tiles). 0 for an empty call or tile.
int64_t DenseTiles(int64_t queries, int64_t keys, AttentionTile tile);
int64_t CausalTiles(int64_t queries, int64_t keys, AttentionTile tile);

// The library's tiles (GpuSpec::occupancy) for a forward or backward call, dense or causal: the
// forward's forward_tile_rows queries x forward_tile_keys (forward_causal_tile_keys for a causal
// call when stated), the backward's backward_tile_queries (backward_causal_tile_queries) x
// backward_tile_rows keys. {0, 0} when the library does not state them.
AttentionTile ForwardTile(const GpuSpec& gpu, bool causal);
AttentionTile BackwardTile(const GpuSpec& gpu, bool causal);

// Visible pairs over computed pair slots of the kernels a rank runs on `layout`'s documents
// (kDocZigzag with its documents), averaged over the ranks, for the forward and the backward.
// 1 where nothing is modelled: another layout, no documents, or tiles the library does not state.
// With `causal` the documents are causal (a causal document mask), else bidirectional.
// kGatheredKeys visits every rank for each document up to 2 million (rank, document) pairs, then
// every k-th rank (an even sample; the fill is an average).
struct TileFill {
  double forward = 1.0;
  double backward = 1.0;
};
TileFill DocumentTileFill(const GpuSpec& gpu, const ShardLayout& layout, bool causal,
                          KernelCalls calls);

// Whether DocumentTileFill models `layout` on `gpu` (doc-zigzag with documents, tiles stated):
// then the tiles hold the documents' diagonals, and a cut row costs no extra pairs beside them
// (CutRowExtraPairs).
bool DocumentTilesModelled(const GpuSpec& gpu, const ShardLayout& layout);

// The extra pairs a cut row costs the kernels of `layout` (GpuSpec::cut_row_extra_pairs, or 0
// where DocumentTilesModelled: the tiles count them). The planner and the simulator both take it
// from here.
double CutRowExtraPairs(const GpuSpec& gpu, const ShardLayout& layout);

}  // namespace meshplan
