// Mesh-Attention tile assignment (ALGORITHMS.md, "facts read off the paper's figures").
// n ranks, tile a x b (n = a*b). Block (Q_i, KV_j) is computed by AM[i][j] = a*floor(i/a) + (j mod
// a). a = 1 gives Ring-Attention.
#pragma once

#include <cstdint>
#include <vector>

namespace meshplan::planner::mesh {

struct MeshShape {
  int64_t n = 1;  // ranks
  int64_t a = 1;  // Q-group size (tile rows)
  int64_t b = 1;  // KV-group size (tile columns)
};

// AM[i][j]: the rank computing block (Q_i, KV_j).
int64_t AssignedRank(const MeshShape& shape, int64_t q_shard, int64_t kv_shard);
// Q group of rank g: a*floor(g/a) .. a*floor(g/a)+a-1, in ascending order.
std::vector<int64_t> QGroup(const MeshShape& shape, int64_t rank);
// KV group of rank g: the b ranks g' with g' = g (mod a), ascending.
std::vector<int64_t> KvGroup(const MeshShape& shape, int64_t rank);
// Local-to-global maps: Q#k = base + ((g - base + k) mod a), base = a*floor(g/a), k < a.
int64_t QSlotShard(const MeshShape& shape, int64_t rank, int64_t k);
// KV#k = (g + k*a) mod n, k < b.
int64_t KvSlotShard(const MeshShape& shape, int64_t rank, int64_t k);
// Ring neighbours. Q moves i -> i-1 inside the Q group (wrapping); KV moves i -> i-a (mod n).
int64_t QSendPeer(const MeshShape& shape,
                  int64_t rank);  // where rank sends Q (and Q-side partials)
int64_t QRecvPeer(const MeshShape& shape, int64_t rank);  // where rank receives Q from
int64_t KvSendPeer(const MeshShape& shape, int64_t rank);
int64_t KvRecvPeer(const MeshShape& shape, int64_t rank);

}  // namespace meshplan::planner::mesh
