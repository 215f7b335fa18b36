// Mesh-Attention tile assignment: the formulas of ALGORITHMS.md ("facts read off the paper's
// figures"), written once so the greedy schedule, the expansion and the tests share them.
#include "planner/mesh/assignment.h"

#include <cstddef>

namespace meshplan::planner::mesh {
namespace {

// Non-negative remainder (C++ % keeps the dividend's sign).
int64_t Mod(int64_t x, int64_t m) {
  const int64_t r = x % m;
  return r < 0 ? r + m : r;
}

int64_t Base(const MeshShape& shape, int64_t rank) { return shape.a * (rank / shape.a); }

}  // namespace

int64_t AssignedRank(const MeshShape& shape, int64_t q_shard, int64_t kv_shard) {
  return Base(shape, q_shard) + Mod(kv_shard, shape.a);
}

std::vector<int64_t> QGroup(const MeshShape& shape, int64_t rank) {
  std::vector<int64_t> group;
  group.reserve(static_cast<size_t>(shape.a));
  const int64_t base = Base(shape, rank);
  for (int64_t i = 0; i < shape.a; ++i) group.push_back(base + i);
  return group;
}

std::vector<int64_t> KvGroup(const MeshShape& shape, int64_t rank) {
  std::vector<int64_t> group;
  group.reserve(static_cast<size_t>(shape.b));
  for (int64_t g = Mod(rank, shape.a); g < shape.n; g += shape.a) group.push_back(g);
  return group;
}

int64_t QSlotShard(const MeshShape& shape, int64_t rank, int64_t k) {
  const int64_t base = Base(shape, rank);
  return base + Mod(rank - base + k, shape.a);
}

int64_t KvSlotShard(const MeshShape& shape, int64_t rank, int64_t k) {
  return Mod(rank + k * shape.a, shape.n);
}

int64_t QSendPeer(const MeshShape& shape, int64_t rank) {
  const int64_t base = Base(shape, rank);
  return base + Mod(rank - base - 1, shape.a);
}

int64_t QRecvPeer(const MeshShape& shape, int64_t rank) {
  const int64_t base = Base(shape, rank);
  return base + Mod(rank - base + 1, shape.a);
}

int64_t KvSendPeer(const MeshShape& shape, int64_t rank) { return Mod(rank - shape.a, shape.n); }

int64_t KvRecvPeer(const MeshShape& shape, int64_t rank) { return Mod(rank + shape.a, shape.n); }

}  // namespace meshplan::planner::mesh
