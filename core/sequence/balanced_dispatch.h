// Load-balanced dispatch of a masked sequence (MagiAttention's idea, applied to meshplan's shards):
// cut the sequence into chunks of equal length and give each shard the same number of chunks,
// chosen so that the largest per-shard work (unmasked pairs of the shard's query rows against the
// whole sequence) is as small as a greedy rule makes it. Zigzag balances a causal mask exactly
// with two mirrored chunks per shard; packed documents of uneven lengths (and prefix-LM masks)
// are balanced by neither zigzag nor contiguous shards, which is what this layout is for.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/sequence/mask.h"

namespace meshplan {

// Chunks per shard of the balanced layout: more chunks balance finer but give the kernels
// shorter blocks (the planner's efficiency curve charges that) and the executor more pieces.
inline constexpr int64_t kBalancedChunksPerShard = 4;

struct BalancedChunks {
  int64_t chunks_per_shard = 0;
  int64_t chunk_tokens = 0;
  std::vector<int64_t> chunks_of_shard;  // shard i's chunks: [i * chunks_per_shard, ...), ascending
  std::vector<int64_t> owner;            // owner[x]: the shard of chunk x (tokens [x c, (x+1) c))
};

// Longest-processing-time first with a capacity: chunks in order of decreasing work (ties: lower
// index first) each go to the shard of least work so far among those with fewer than
// `chunks_per_shard` chunks (ties: lower shard). O(C log C) for C = shards x chunks_per_shard.
// REQUIRES: shards >= 1, chunks_per_shard >= 1, counter.seq_len() divisible by C.
std::shared_ptr<const BalancedChunks> BalanceChunks(const PairCounter& counter, int64_t shards,
                                                    int64_t chunks_per_shard);

}  // namespace meshplan
