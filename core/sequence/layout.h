// How the sequence is cut into shards, and how much unmasked work a (q shard, kv shard) block has.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "core/base/status.h"
#include "core/sequence/balanced_dispatch.h"
#include "core/sequence/mask.h"

namespace meshplan {

enum class Layout {
  kContiguous,  // shard i = tokens [i*n, (i+1)*n), n = S/N
  kZigzag,      // 2N chunks of S/(2N); shard i = chunks i and 2N-1-i (balances causal work)
  kStriped,     // shard i = tokens t with t mod N == i (balances causal work at token level)
  kBalanced,    // kBalancedChunksPerShard chunks per shard chosen by work
                // (core/sequence/balanced_dispatch.h)
  kDocZigzag,   // packed documents as TransformerEngine's THD format splits them: each document
                // in 2N chunks, shard i = chunks i and 2N-1-i of every document (document masks
                // only; every document a multiple of 2N x subdivide tokens: docs/schemes.md)
};
std::string_view LayoutName(Layout layout);
Result<Layout> ParseLayout(std::string_view text);

struct TokenRange {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
};

// The work of one (q shard, kv shard) block: its unmasked pairs, and its cut rows: over the
// block's rectangles (q range x kv range), the query rows that see some but not all of the
// rectangle's keys (PairCounter::CutRows), i.e. the length of the mask's cuts through the block.
// Kernels compute whole visible rectangles as dense products (zigzag's off-diagonal chunk pairs,
// for instance, however the block as a whole is cut) and work tile by tile, masking pair by pair,
// only along a cut: that extra work grows with the cut's length, not with the block's area
// (GpuSpec::cut_row_extra_pairs per cut row).
struct BlockWork {
  int64_t pairs = 0;
  int64_t cut_rows = 0;
  // cut_rows / pairs (0 for an empty block): Op::cut_rows_per_pair.
  double CutRowsPerPair() const;
};
// Adds the rectangle [q.begin, q.end) x [k.begin, k.end) of the attention matrix to `work`.
void AddRectangleWork(const PairCounter& counter, TokenRange q, TokenRange k, BlockWork* work);

// Doc-zigzag's work in closed form (compute_model.cc and ShardLayout::Work use it): over the
// documents, with c = length / 2N each document's chunk, sum c^2, sum c and sum 2(c - 1) (a
// causal chunk against itself is cut on c - 1 rows, and a diagonal block holds two such).
struct DocZigzagSums {
  int64_t chunk_squares = 0;
  int64_t chunks = 0;
  int64_t cut_rows = 0;
};

// How a scheme's kernels meet a doc-zigzag layout's documents, as the frameworks call them:
// - kBlocks: one call per (query shard, KV shard) block over every document's pieces
//   (TransformerEngine's p2p ring, and the ring inside a head-parallel scheme): rank r's two
//   chunks of a document (2c rows) against the block's KV shard's two (2c keys); under a causal
//   mask the diagonal block is one causal 2c x 2c call and the others, as TransformerEngine
//   halves them, 2c rows x the first c keys (steps up to the rank's own) or the last c rows x 2c
//   keys.
// - kGatheredKeys: all keys gathered, each of the rank's two chunks in a call of its own against
//   the document's keys up to its end (TransformerEngine's all-gather: chunk r sees (r + 1) c
//   keys, chunk 2N-1-r (2N - r) c), the chunk being the last rows of its keys (bottom-right).
enum class KernelCalls { kBlocks, kGatheredKeys };

// A partition of the sequence [0, S) into `num_shards` shards of equal size. With subdivide U > 1,
// each shard is further cut into U sub-shards (sub-shard u of shard i takes the u-th of U equal
// consecutive parts of each of shard i's ranges): ranks of a head-parallel (Ulysses) group start
// with sub-shards and gather whole shards with an all-to-all. Rank r's input is sub-shard r.
struct ShardLayout {
  ShardLayout() = default;
  ShardLayout(Layout kind_, int64_t seq_len_, int64_t num_shards_, int64_t subdivide_)
      : kind(kind_), seq_len(seq_len_), num_shards(num_shards_), subdivide(subdivide_) {}

  Layout kind = Layout::kContiguous;
  int64_t seq_len = 0;
  int64_t num_shards = 1;
  int64_t subdivide = 1;
  // kBalanced: the chunks of each shard, which depend on the mask (MakeShardLayout). A balanced
  // layout without them is refused by Validate (the planner's schemes that offer the layout make
  // them: Strategy::OffersManyRangeLayouts).
  std::shared_ptr<const BalancedChunks> balanced;
  // kDocZigzag: the documents' lengths in order (the mask's; MakeShardLayout). Refused by Validate
  // when missing.
  std::shared_ptr<const std::vector<int64_t>> documents;
  // kDocZigzag: DocZigzagSums of `documents` at num_shards, made with them (AttachDocuments) so a
  // block's work is O(1); computed on each call when missing.
  std::shared_ptr<const DocZigzagSums> doc_sums;

  // Divisibility of the sequence and layout/mask compatibility; the reason names the sizes.
  Status Validate(const Mask& mask) const;
  int64_t shard_tokens() const { return seq_len / num_shards; }
  // Contiguous pieces of shard i (1 for contiguous, 2 for zigzag, its chunks for balanced).
  // REQUIRES: kind != kStriped (a striped shard is a stride, not a few ranges).
  std::vector<TokenRange> Ranges(int64_t shard) const;
  // Contiguous pieces of input sub-shard `sub` (= rank) when subdivide > 1.
  std::vector<TokenRange> SubRanges(int64_t sub) const;
  // Contiguous pieces per shard: 2 for zigzag, kBalancedChunksPerShard for balanced, 2 per
  // document for doc-zigzag, else 1.
  int64_t RangesPerShard() const;
  // Kernel calls a block takes: one per piece, except doc-zigzag, whose documents go to one
  // variable-length call (TransformerEngine's THD attention takes cu_seqlens).
  int64_t LaunchesPerBlock() const;
  // Shorter side in tokens of the contiguous pieces a block kernel sees (kernel efficiency key).
  // Doc-zigzag: its chunks differ by document; the pair-weighted mean chunk (sum c^3 / sum c^2,
  // a chunk pair of c tokens having c^2 pairs), so the short documents' chunks slow it by their
  // share of the work.
  int64_t KernelBlockTokens() const;
  // kDocZigzag's sums (doc_sums, else computed from documents: O(documents)).
  DocZigzagSums DocSums() const;
  // Unmasked (q, k) pairs in block (q shard i, kv shard j), exact.
  int64_t BlockPairs(const PairCounter& counter, int64_t q_shard, int64_t kv_shard) const;
  // The block's pairs and cut rows (BlockWork), exact. A striped shard interleaves with every
  // other at token level, so a causal striped block is cut along its diagonal like a rank's own
  // contiguous block: every row but one is cut.
  BlockWork Work(const PairCounter& counter, int64_t q_shard, int64_t kv_shard) const;
};

// How a layout's block work (ShardLayout::Work: pairs and cut rows) depends on the block's shards
// under a mask: the fact from which the simulator proves a schedule's rank symmetry
// (Strategy::ProveTranslationInvariance). Derived by hand (layout.cc) and checked block by block
// in tests/core/sequence/layout_test.cc.
enum class BlockWorkSymmetry {
  kNone,      // not derived: blocks may differ in any way
  kUniform,   // every block (i, j) has the same work
  kDiagonal,  // a block's work depends only on whether i == j (the same under any permutation
              // applied to both shards)
};
// REQUIRES: layout.Validate(mask) is ok.
BlockWorkSymmetry WorkSymmetry(const ShardLayout& layout, const Mask& mask);

// Gives a doc-zigzag layout its documents and their sums at layout->num_shards.
void AttachDocuments(ShardLayout* layout, std::shared_ptr<const std::vector<int64_t>> documents);

// The layout of `kind` over counter's sequence; kBalanced gets its chunks balanced by the mask's
// work (left without them when the sequence does not divide into the chunks: Validate says so),
// kDocZigzag the mask's documents.
ShardLayout MakeShardLayout(Layout kind, const PairCounter& counter, int64_t shards,
                            int64_t subdivide);

}  // namespace meshplan
