#include "planner/context.h"

namespace meshplan::planner {

ShardBytes ComputeShardBytes(const Workload& w, int64_t num_ranks) {
  ShardBytes s;
  const double tokens = static_cast<double>(w.batch) * static_cast<double>(w.seq_len) /
                        static_cast<double>(num_ranks);
  const double x = tokens * static_cast<double>(w.head_dim) * BytesPerElement(w.dtype);
  const double partial_scale =
      static_cast<double>(BytesPerElement(w.partial_dtype)) / BytesPerElement(w.dtype);
  s.q = static_cast<double>(w.q_heads) * x;
  s.kv = 2.0 * static_cast<double>(w.kv_heads) * x;
  s.o_partial = s.q * partial_scale;
  s.lse = tokens * static_cast<double>(w.q_heads) * 4.0;
  s.dq_partial = s.q * partial_scale;
  s.dkv_partial = s.kv * partial_scale;
  return s;
}

}  // namespace meshplan::planner
