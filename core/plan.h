// A plan: which scheme, with which parameters and placement, for which workload and cluster.
// It is a small recipe; the per-rank schedule is derived from it deterministically.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/layout.h"
#include "core/status.h"
#include "core/workload.h"

namespace meshplan {

inline constexpr int kPlanSchemaVersion = 1;

enum class Scheme {
  kRing,         // p2p KV ring (contiguous, zigzag or striped layout)
  kAllGatherKV,  // all-gather K,V then local attention (Llama 3 CP)
  kUlysses,      // all-to-all sequence <-> heads
  kUsp,          // Ulysses (degree U) x Ring (degree R)
  kLoongTrain,   // head parallel hp x double ring (inner window w, outer cp/w)
  kAttention2D,  // a x b tile, collectives (ATTENTION2D)
  kMesh,         // a x b tile, p2p ring shifts, greedy schedule (Mesh-Attention)
  kMeshUlysses,  // Ulysses degree U x Mesh a x b over the remaining ranks
  kAttention2DOverlap,  // ATTENTION2D-O: ATTENTION2D's tile, gathers and reductions as ring
                        // steps overlapped with the blocks (appended: existing values keep theirs)
};
inline constexpr Scheme kAllSchemes[] = {Scheme::kRing,        Scheme::kAllGatherKV, Scheme::kUlysses,
                                         Scheme::kUsp,         Scheme::kLoongTrain,  Scheme::kAttention2D,
                                         Scheme::kMesh,        Scheme::kMeshUlysses, Scheme::kAttention2DOverlap};
// "ring", "allgather-kv", "ulysses", "usp", "loongtrain", "attention2d", "mesh", "mesh-ulysses",
// "attention2d-o".
std::string_view SchemeName(Scheme scheme);
Result<Scheme> ParseScheme(std::string_view text);

// How partial results (O with LSE, dQ, dK/dV) are reduced along a ring group in Mesh-Attention.
enum class ReduceChain {
  kOwnerLast,   // the chain starts at the first non-owner and ends at the owner: (n-1) hops
  kOwnerFirst,  // the owner's partial leaves first and the total comes back: n hops
                // (the paper's step table); n = group size
};
std::string_view ReduceChainName(ReduceChain chain);
Result<ReduceChain> ParseReduceChain(std::string_view text);

// One axis of a scheme's rank grid, e.g. {"q", a} and {"kv", b} for Mesh.
struct RankDim {
  std::string name;
  int64_t size = 1;
};

struct SchemeParams {
  Scheme scheme = Scheme::kRing;
  Layout layout = Layout::kZigzag;
  int64_t ulysses = 1;  // head-parallel degree U (Ulysses: P; USP, LoongTrain, Mesh-Ulysses)
  int64_t ring = 1;     // ring degree R (Ring, all-gather: P; USP, LoongTrain cp)
  int64_t window = 1;   // LoongTrain inner-ring size w (w divides cp)
  int64_t tile_a = 1;   // 2-D schemes: Q-group size a
  int64_t tile_b = 1;   // 2-D schemes: KV-group size b
  bool cache_forward = false;  // keep gathered Q/KV from the forward for the backward
  ReduceChain reduce_chain = ReduceChain::kOwnerLast;
  // Dimension names innermost first on GPU indices (a permutation of RankDims()).
  std::vector<std::string> placement;

  // The rank grid, innermost first in rank numbering (canonical order):
  //   ring / allgather-kv: [cp]; ulysses: [ulysses]; usp: [ulysses, ring];
  //   loongtrain: [head, inner, outer]; attention2d / attention2d-o / mesh: [q, kv]; mesh-ulysses: [ulysses, q, kv].
  std::vector<RankDim> RankDims() const;
  // Short human form: "a=8 b=32 zigzag cache q>kv".
  std::string Describe() const;
};

struct Plan {
  int schema_version = kPlanSchemaVersion;
  SchemeParams params;
  Workload workload;
  std::string topology_name;
  std::string topology_source;  // the file the plan was made for ("built-in" for the default)
  int64_t num_gpus = 0;
};

// Maps scheme ranks to GPUs. A rank's canonical id is the mixed-radix number of its coordinates
// in RankDims() order (first dimension fastest); its GPU is the mixed-radix number of the same
// coordinates in placement order.
class Placement {
 public:
  // REQUIRES: placement is a permutation of dims (ValidatePlacement).
  Placement(const std::vector<RankDim>& dims, const std::vector<std::string>& placement);
  int64_t num_ranks() const { return num_ranks_; }
  int64_t GpuOf(int64_t rank) const;
  int64_t RankOfGpu(int64_t gpu) const;
  // Coordinate of `rank` along canonical dimension d.
  int64_t Coord(int64_t rank, int d) const { return (rank / rank_stride_[d]) % sizes_[d]; }
  // Rank with coordinate d replaced by value.
  int64_t WithCoord(int64_t rank, int d, int64_t value) const {
    return rank + (value - Coord(rank, d)) * rank_stride_[d];
  }
  int64_t DimSize(int d) const { return sizes_[d]; }
  // Distance in GPU indices between ranks one apart along canonical dimension d.
  int64_t GpuStride(int d) const { return gpu_stride_[d]; }
  int num_dims() const { return static_cast<int>(sizes_.size()); }

 private:
  int64_t num_ranks_ = 1;
  std::vector<int64_t> sizes_, rank_stride_, gpu_stride_;
};

// Checks that `placement` names each dimension exactly once.
Status ValidatePlacement(const std::vector<RankDim>& dims, const std::vector<std::string>& placement);
// The canonical placement (names in RankDims() order).
std::vector<std::string> CanonicalPlacement(const std::vector<RankDim>& dims);

}  // namespace meshplan
