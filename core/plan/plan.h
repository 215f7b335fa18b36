// A plan: which scheme, with which parameters and placement, for which workload and cluster.
// It is a small recipe; the per-rank schedule is derived from it deterministically.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"
#include "core/sequence/layout.h"
#include "core/workload/workload.h"

namespace meshplan {

inline constexpr int kPlanSchemaVersion = 1;

// A scheme's identity: its name as plan files, flags and outputs spell it. Core knows no scheme
// by name: the planner's registry (planner/schemes/registry.h) lists them, parses names and gives
// each name its unit (rank grid, rules, estimate, schedule). A default Scheme names none.
class Scheme {
 public:
  Scheme() = default;
  explicit Scheme(std::string_view name) : name_(name) {}
  std::string_view name() const { return name_; }
  bool empty() const { return name_.empty(); }
  friend bool operator==(const Scheme&, const Scheme&) = default;

 private:
  std::string name_;
};
inline std::string_view SchemeName(const Scheme& scheme) { return scheme.name(); }

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
  Scheme scheme;
  Layout layout = Layout::kZigzag;
  // The degrees a scheme reads (each scheme's unit says which, and what they mean for it):
  int64_t ulysses = 1;         // head-parallel degree U
  int64_t ring = 1;            // ring (context-parallel) degree R
  int64_t window = 1;          // inner-ring size w of a double ring (w divides R)
  int64_t tile_a = 1;          // 2-D schemes: Q-group size a
  int64_t tile_b = 1;          // 2-D schemes: KV-group size b
  bool cache_forward = false;  // keep gathered Q/KV from the forward for the backward
  ReduceChain reduce_chain = ReduceChain::kOwnerLast;
  // Dimension names innermost first on GPU indices (a permutation of the scheme's rank grid,
  // planner::RankDims).
  std::vector<std::string> placement;
};

struct Plan {
  int schema_version = kPlanSchemaVersion;
  SchemeParams params;
  Workload workload;
  std::string topology_name;
  std::string topology_source;  // the file the plan was made for ("built-in" for the default)
  // The attention library whose kernel curve the plan was made with (GpuSpec::attention_kernel);
  // "" in plan files written before it was recorded: the topology file's default.
  std::string attention_kernel;
  int64_t num_gpus = 0;  // the context-parallel group's GPUs
  // Tensor parallelism and replicas beside the plan (--tp, --dp): the topology file is the whole
  // cluster, the plan runs on ContextParallelCluster of it and its workload holds one GPU's heads.
  // 1 and 1 in files that do not say.
  int64_t tp = 1;
  int64_t dp = 1;
};

// Sequences x query heads one of the plan's kernel calls covers: the workload's batch times its
// query heads over the head-parallel degree (SchemeParams::ulysses; 1 for schemes without one),
// as the planner's estimates count them (PlanContext::ShapeOf). Sets the kernels' occupancy.
inline int64_t KernelBatchHeads(const Plan& plan) {
  return plan.workload.batch * plan.workload.q_heads / std::max<int64_t>(1, plan.params.ulysses);
}

// Maps scheme ranks to GPUs. A rank's canonical id is the mixed-radix number of its coordinates
// in the rank grid's order (first dimension fastest); its GPU is the mixed-radix number of the same
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
Status ValidatePlacement(const std::vector<RankDim>& dims,
                         const std::vector<std::string>& placement);
// The canonical placement (names in rank-grid order).
std::vector<std::string> CanonicalPlacement(const std::vector<RankDim>& dims);

}  // namespace meshplan
