#include "core/sequence/balanced_dispatch.h"

#include <algorithm>
#include <numeric>
#include <queue>
#include <utility>

namespace meshplan {

std::shared_ptr<const BalancedChunks> BalanceChunks(const PairCounter& counter, int64_t shards,
                                                    int64_t chunks_per_shard) {
  auto out = std::make_shared<BalancedChunks>();
  const int64_t chunks = shards * chunks_per_shard;
  const int64_t seq = counter.seq_len();
  out->chunks_per_shard = chunks_per_shard;
  out->chunk_tokens = seq / chunks;
  const int64_t c = out->chunk_tokens;
  std::vector<int64_t> work(static_cast<size_t>(chunks));
  for (int64_t x = 0; x < chunks; ++x) work[x] = counter.Count(x * c, (x + 1) * c, 0, seq);
  std::vector<int64_t> order(static_cast<size_t>(chunks));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return work[a] > work[b]; });

  // (work so far, shard), least first; a shard leaves the heap once it holds its chunks.
  using Load = std::pair<int64_t, int64_t>;
  std::priority_queue<Load, std::vector<Load>, std::greater<>> open;
  for (int64_t s = 0; s < shards; ++s) open.push({0, s});
  std::vector<int64_t> taken(static_cast<size_t>(shards), 0);
  out->owner.assign(static_cast<size_t>(chunks), 0);
  for (int64_t x : order) {
    const auto [load, shard] = open.top();
    open.pop();
    out->owner[x] = shard;
    if (++taken[shard] < chunks_per_shard) open.push({load + work[x], shard});
  }
  // Each shard's chunks in ascending order: a counting sort by owner keeps chunk order.
  out->chunks_of_shard.resize(static_cast<size_t>(chunks));
  std::vector<int64_t> next(static_cast<size_t>(shards));
  for (int64_t s = 0; s < shards; ++s) next[s] = s * chunks_per_shard;
  for (int64_t x = 0; x < chunks; ++x) out->chunks_of_shard[next[out->owner[x]]++] = x;
  return out;
}

}  // namespace meshplan
