// What every strategy needs to evaluate a plan: the workload, the cluster, and derived sizes.
#pragma once

#include <cstdint>

#include "core/mask.h"
#include "core/topology.h"
#include "core/workload.h"

namespace meshplan::planner {

// Byte sizes of one rank's shards (ALGORITHMS.md notation): X = B*(S/P)*d*e is one head of one
// rank's shard. Partials travel in workload.partial_dtype; LSE and D are fp32.
struct ShardBytes {
  double q = 0;       // |Q| = |O| = |dO| = Hq*X
  double kv = 0;      // |KV| = 2*Hkv*X
  double o_partial = 0;  // |O_p| = Hq*X in the partial dtype
  double lse = 0;     // |LSE| = |D| = B*(S/P)*Hq*4
  double dq_partial = 0;   // partial dQ in the partial dtype
  double dkv_partial = 0;  // partial dK+dV in the partial dtype
};
ShardBytes ComputeShardBytes(const Workload& workload, int64_t num_ranks);

struct PlanContext {
  PlanContext(const Workload& w, const Topology& t)
      : workload(w), topology(t), counter(w.mask, w.seq_len), num_ranks(t.num_gpus()),
        shard(ComputeShardBytes(w, t.num_gpus())) {}
  const Workload& workload;
  const Topology& topology;
  PairCounter counter;  // unmasked pairs of the workload's mask
  int64_t num_ranks;    // P = every GPU of the topology
  ShardBytes shard;
  // Forward FLOPs of `pairs` unmasked (q, k) pairs over `heads` query heads: 4*B*pairs*heads*d.
  double ForwardFlops(int64_t pairs, int64_t heads) const {
    return 4.0 * static_cast<double>(workload.batch) * static_cast<double>(pairs) *
           static_cast<double>(heads) * static_cast<double>(workload.head_dim);
  }
};

// Backward FLOPs are 2.5x forward (recomputation included), the FlashAttention convention.
inline constexpr double kBackwardFlopsFactor = 2.5;

}  // namespace meshplan::planner
