#include "executor/shard_store.h"

namespace meshplan::exec {

Entry Entry::Zeros(int64_t batch, std::vector<int64_t> positions, int32_t head_begin, int32_t heads, int32_t dim,
                   float value) {
  Entry e;
  e.batch = batch;
  e.positions = std::move(positions);
  e.head_begin = head_begin;
  e.heads = heads;
  e.dim = dim;
  e.data.assign(static_cast<size_t>(batch * e.rows() * heads * dim), value);
  return e;
}

ShardStore::Ref ShardStore::Find(const EntryKey& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : it->second;
}

ShardStore::Ref ShardStore::Put(const EntryKey& key, Entry entry) {
  auto ref = std::make_shared<Entry>(std::move(entry));
  std::lock_guard<std::mutex> lock(mutex_);
  entries_[key] = ref;
  return ref;
}

std::optional<Entry> ShardStore::Take(const EntryKey& key) {
  Ref ref;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(key);
    if (it == entries_.end()) return std::nullopt;
    ref = std::move(it->second);
    entries_.erase(it);
  }
  if (ref.use_count() == 1) return std::move(*ref);
  return *ref;  // someone still reads it: hand over a copy
}

std::vector<std::pair<EntryKey, ShardStore::Ref>> ShardStore::All() {
  std::lock_guard<std::mutex> lock(mutex_);
  return {entries_.begin(), entries_.end()};
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
