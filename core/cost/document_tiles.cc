#include "core/cost/document_tiles.h"

#include <algorithm>

namespace meshplan {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

bool Stated(AttentionTile t) { return t.queries > 0 && t.keys > 0; }

// Visible pairs of a bottom-right causal call: every row sees the keys - queries keys before its
// chunk, and row j of the chunk j + 1 of it.
double CausalVisible(int64_t queries, int64_t keys) {
  const double q = static_cast<double>(queries);
  return q * static_cast<double>(keys - queries) + q * (q + 1.0) / 2.0;
}

double Slots(int64_t tiles, AttentionTile t) {
  return static_cast<double>(tiles) * static_cast<double>(t.queries) * static_cast<double>(t.keys);
}

// Sums of visible pairs and computed slots, forward and backward.
struct Sums {
  double visible = 0, forward_slots = 0, backward_slots = 0;
};

// kBlocks on one document of chunk c over n shards, averaged over the ranks (module comment).
void AddBlockCalls(int64_t c, int64_t n, bool causal, const AttentionTile tiles[2][2], Sums* s) {
  const double others = static_cast<double>(n - 1);
  for (int pass = 0; pass < 2; ++pass) {
    const AttentionTile dense = tiles[pass][0], diagonal = tiles[pass][1];
    double slots;
    if (causal) {
      slots = Slots(CausalTiles(2 * c, 2 * c, diagonal), diagonal) +
              others / 2.0 *
                  (Slots(DenseTiles(2 * c, c, dense), dense) +
                   Slots(DenseTiles(c, 2 * c, dense), dense));
    } else {
      slots = static_cast<double>(n) * Slots(DenseTiles(2 * c, 2 * c, dense), dense);
    }
    (pass == 0 ? s->forward_slots : s->backward_slots) += slots;
  }
  const double cc = static_cast<double>(c) * static_cast<double>(c);
  s->visible += causal ? (2.0 * cc + static_cast<double>(c)) + others * 2.0 * cc
                       : static_cast<double>(n) * 4.0 * cc;
}

// kGatheredKeys on one document of chunk c over n shards, at rank r.
void AddGatheredCalls(int64_t c, int64_t n, int64_t r, bool causal, const AttentionTile tiles[2][2],
                      Sums* s) {
  const int64_t keys[2] = {(r + 1) * c, (2 * n - r) * c};
  for (int64_t k : keys) {
    const int64_t span = causal ? k : 2 * n * c;
    for (int pass = 0; pass < 2; ++pass) {
      const AttentionTile t = tiles[pass][causal ? 1 : 0];
      const double slots = Slots(causal ? CausalTiles(c, span, t) : DenseTiles(c, span, t), t);
      (pass == 0 ? s->forward_slots : s->backward_slots) += slots;
    }
    s->visible +=
        causal ? CausalVisible(c, span) : static_cast<double>(c) * static_cast<double>(span);
  }
}

constexpr int64_t kMaxGatheredVisits = 2'000'000;

}  // namespace

int64_t DenseTiles(int64_t queries, int64_t keys, AttentionTile tile) {
  if (queries <= 0 || keys <= 0 || !Stated(tile)) return 0;
  return CeilDiv(queries, tile.queries) * CeilDiv(keys, tile.keys);
}

int64_t CausalTiles(int64_t queries, int64_t keys, AttentionTile tile) {
  if (queries <= 0 || keys <= 0 || !Stated(tile)) return 0;
  const int64_t before = std::max<int64_t>(keys - queries, 0);
  const int64_t rows = std::min(queries, keys);
  int64_t tiles = 0;
  for (int64_t i = 0; i * tile.queries < rows; ++i)
    tiles += CeilDiv(before + std::min((i + 1) * tile.queries, rows), tile.keys);
  return tiles;
}

AttentionTile ForwardTile(const GpuSpec& gpu, bool causal) {
  const KernelOccupancy& o = gpu.occupancy;
  const int64_t keys =
      causal && o.forward_causal_tile_keys > 0 ? o.forward_causal_tile_keys : o.forward_tile_keys;
  if (o.forward_tile_rows <= 0 || keys <= 0) return {};
  return {o.forward_tile_rows, keys};
}

AttentionTile BackwardTile(const GpuSpec& gpu, bool causal) {
  const KernelOccupancy& o = gpu.occupancy;
  const int64_t queries = causal && o.backward_causal_tile_queries > 0
                              ? o.backward_causal_tile_queries
                              : o.backward_tile_queries;
  if (o.backward_tile_rows <= 0 || queries <= 0) return {};
  return {queries, o.backward_tile_rows};
}

bool DocumentTilesModelled(const GpuSpec& gpu, const ShardLayout& layout) {
  return layout.kind == Layout::kDocZigzag && layout.documents != nullptr &&
         !layout.documents->empty() && Stated(ForwardTile(gpu, false)) &&
         Stated(ForwardTile(gpu, true)) && Stated(BackwardTile(gpu, false)) &&
         Stated(BackwardTile(gpu, true));
}

double CutRowExtraPairs(const GpuSpec& gpu, const ShardLayout& layout) {
  return DocumentTilesModelled(gpu, layout) ? 0.0 : gpu.cut_row_extra_pairs;
}

TileFill DocumentTileFill(const GpuSpec& gpu, const ShardLayout& layout, bool causal,
                          KernelCalls calls) {
  if (!DocumentTilesModelled(gpu, layout)) return {};
  // tiles[pass][causal call]: pass 0 forward, 1 backward.
  const AttentionTile tiles[2][2] = {{ForwardTile(gpu, false), ForwardTile(gpu, true)},
                                     {BackwardTile(gpu, false), BackwardTile(gpu, true)}};
  const int64_t n = layout.num_shards;
  const int64_t documents = static_cast<int64_t>(layout.documents->size());
  const int64_t stride = calls == KernelCalls::kGatheredKeys
                             ? std::max<int64_t>(1, CeilDiv(n * documents, kMaxGatheredVisits))
                             : 1;
  Sums s;
  for (int64_t length : *layout.documents) {
    const int64_t c = length / (2 * n);
    if (c <= 0) continue;
    if (calls == KernelCalls::kBlocks) {
      AddBlockCalls(c, n, causal, tiles, &s);
    } else {
      for (int64_t r = 0; r < n; r += stride) AddGatheredCalls(c, n, r, causal, tiles, &s);
    }
  }
  if (!(s.visible > 0) || !(s.forward_slots > 0) || !(s.backward_slots > 0)) return {};
  return {std::min(1.0, s.visible / s.forward_slots), std::min(1.0, s.visible / s.backward_slots)};
}

}  // namespace meshplan
