#include "executor/device/shard_store.h"

namespace meshplan::exec {

Entry Entry::Zeros(int64_t batch, std::vector<int64_t> positions, int32_t head_begin, int32_t heads,
                   int32_t dim, float value) {
  Entry e;
  e.batch = batch;
  e.positions = std::move(positions);
  e.head_begin = head_begin;
  e.heads = heads;
  e.dim = dim;
  e.data.assign(static_cast<size_t>(batch * e.rows() * heads * dim), value);
  return e;
}

std::vector<int64_t> ShardPositions(const ShardLayout& layout, int64_t shard) {
  std::vector<int64_t> out;
  if (layout.kind == Layout::kStriped) {
    for (int64_t t = shard; t < layout.seq_len; t += layout.num_shards) out.push_back(t);
    return out;
  }
  for (const TokenRange& r : layout.Ranges(shard)) {
    for (int64_t t = r.begin; t < r.end; ++t) out.push_back(t);
  }
  return out;
}

std::vector<int64_t> SubShardPositions(const ShardLayout& layout, int64_t sub) {
  if (layout.subdivide <= 1) return ShardPositions(layout, sub);
  if (layout.kind != Layout::kStriped) {
    std::vector<int64_t> out;
    for (const TokenRange& r : layout.SubRanges(sub)) {
      for (int64_t t = r.begin; t < r.end; ++t) out.push_back(t);
    }
    return out;
  }
  // Striped: the u-th of U equal consecutive parts of the shard's positions.
  const std::vector<int64_t> all = ShardPositions(layout, sub / layout.subdivide);
  const int64_t part = sub % layout.subdivide;
  const int64_t n = static_cast<int64_t>(all.size()) / layout.subdivide;
  return std::vector<int64_t>(all.begin() + part * n, all.begin() + (part + 1) * n);
}

}  // namespace meshplan::exec
