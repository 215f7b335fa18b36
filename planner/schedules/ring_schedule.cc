// Ring attention (docs/schedules.md, "Ring"): P steps per pass; KV moves rank r -> r-1, so rank r
// holds KV shard (r + s) mod P at step s; the backward adds the owner-last dK+dV chain.
#include <numeric>

#include "planner/schedules/common.h"
#include "planner/schedules/expand.h"

namespace meshplan::planner {

Result<Schedule> ExpandRing(const PlanContext& ctx, const SchemeParams& params) {
  const int64_t p = ctx.num_ranks;
  const Workload& w = ctx.workload;
  const ShardLayout layout{params.layout, w.seq_len, p, 1};
  MESHPLAN_RETURN_IF_ERROR(sched::CheckGrid(ctx, params, layout, 1));

  Schedule s = sched::NewSchedule(ctx, params, layout, static_cast<size_t>(7 * p));
  std::vector<int32_t> ring(static_cast<size_t>(p));
  std::iota(ring.begin(), ring.end(), 0);
  std::vector<int64_t> shards(ring.begin(), ring.end());
  for (int64_t r = 0; r < p; ++r) {
    sched::RingPass pass;
    pass.n = p;
    pass.pos = r;
    pass.rank_of = ring;
    pass.kv_shard_of = shards;
    pass.q_shard = r;
    pass.head_begin = 0;
    pass.head_count = w.q_heads;
    pass.kv_bytes = sched::WholeBytes(ctx.shard.kv);
    pass.dkv_bytes = sched::WholeBytes(ctx.shard.dkv_partial);
    if (HasForward(w.pass)) {
      pass.phase = Phase::kForward;
      sched::EmitRingPass(s.ranks[r], ctx, layout, pass);
    }
    if (HasBackward(w.pass)) {
      pass.phase = Phase::kBackward;
      pass.move_kv = !params.cache_forward;  // cache: the forward left every KV shard here
      pass.dkv_chain = true;
      sched::EmitRingPass(s.ranks[r], ctx, layout, pass);
    }
  }
  return s;
}

}  // namespace meshplan::planner
