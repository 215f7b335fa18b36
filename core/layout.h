// How the sequence is cut into shards, and how much unmasked work a (q shard, kv shard) block has.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/mask.h"
#include "core/status.h"

namespace meshplan {

enum class Layout {
  kContiguous,  // shard i = tokens [i*n, (i+1)*n), n = S/N
  kZigzag,      // 2N chunks of S/(2N); shard i = chunks i and 2N-1-i (balances causal work)
  kStriped,     // shard i = tokens t with t mod N == i (balances causal work at token level)
};
std::string_view LayoutName(Layout layout);
Result<Layout> ParseLayout(std::string_view text);

struct TokenRange {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
};

// A partition of the sequence [0, S) into `num_shards` shards of equal size. With subdivide U > 1,
// each shard is further cut into U sub-shards (sub-shard u of shard i takes the u-th of U equal
// consecutive parts of each of shard i's ranges): ranks of a head-parallel (Ulysses) group start
// with sub-shards and gather whole shards with an all-to-all. Rank r's input is sub-shard r.
struct ShardLayout {
  Layout kind = Layout::kContiguous;
  int64_t seq_len = 0;
  int64_t num_shards = 1;
  int64_t subdivide = 1;

  // Divisibility of the sequence and layout/mask compatibility; the reason names the sizes.
  Status Validate(const Mask& mask) const;
  int64_t shard_tokens() const { return seq_len / num_shards; }
  // Contiguous pieces of shard i (1 for contiguous, 2 for zigzag).
  // REQUIRES: kind != kStriped (a striped shard is a stride, not a few ranges).
  std::vector<TokenRange> Ranges(int64_t shard) const;
  // Contiguous pieces of input sub-shard `sub` (= rank) when subdivide > 1.
  std::vector<TokenRange> SubRanges(int64_t sub) const;
  // Shorter side in tokens of the contiguous pieces a block kernel sees (kernel efficiency key).
  int64_t KernelBlockTokens() const;
  // Unmasked (q, k) pairs in block (q shard i, kv shard j), exact.
  int64_t BlockPairs(const PairCounter& counter, int64_t q_shard, int64_t kv_shard) const;
};

}  // namespace meshplan
