// What one rank holds while it runs a schedule: pieces of tensors ("entries") keyed by tensor,
// shard and kind (the execution engine keeps its own device-side entries with these keys; this
// host Entry carries outputs back). An entry covers some token rows (with their positions in the
// sequence) and a contiguous range of heads, for every batch element: data[b][row][head][e].
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <tuple>
#include <vector>

#include "core/plan/schedule.h"
#include "core/sequence/layout.h"

namespace meshplan::exec {

struct Entry {
  int64_t batch = 0;
  std::vector<int64_t> positions;  // token position of each row
  int32_t head_begin = 0;
  int32_t heads = 0;
  int32_t dim = 0;
  std::vector<float> data;

  int64_t rows() const { return static_cast<int64_t>(positions.size()); }
  int64_t row_stride() const { return static_cast<int64_t>(heads) * dim; }
  // First element of (b, row, head) where head is a global head index.
  float* At(int64_t b, int64_t row, int32_t head) {
    return data.data() + ((b * rows() + row) * heads + (head - head_begin)) * dim;
  }
  const float* At(int64_t b, int64_t row, int32_t head) const {
    return data.data() + ((b * rows() + row) * heads + (head - head_begin)) * dim;
  }
  bool HasHeads(int32_t begin, int32_t count) const {
    return begin >= head_begin && begin + count <= head_begin + heads;
  }
  static Entry Zeros(int64_t batch, std::vector<int64_t> positions, int32_t head_begin,
                     int32_t heads, int32_t dim, float value = 0.0f);
};

// Which kind of piece: data of a compute-layout shard (also accumulators), data of an input
// sub-shard (before a head all-to-all), or a received partial awaiting its Merge.
enum class EntryKind : uint8_t { kShard, kSubShard, kIncoming };

struct EntryKey {
  uint16_t tensor = 0;  // one TensorBit
  int32_t id = 0;       // shard or sub-shard
  EntryKind kind = EntryKind::kShard;
  bool operator<(const EntryKey& o) const {
    return std::tie(tensor, id, kind) < std::tie(o.tensor, o.id, o.kind);
  }
};

// Token positions of a compute-layout shard and of an input sub-shard (any layout, striped too).
std::vector<int64_t> ShardPositions(const ShardLayout& layout, int64_t shard);
std::vector<int64_t> SubShardPositions(const ShardLayout& layout, int64_t sub);

}  // namespace meshplan::exec
