// All-gather KV (Llama 3 context parallelism; docs/schedules.md): one all-gather of K and V over
// all ranks, local attention of the rank's Q shard against every KV shard; the backward gathers
// KV again (unless cached) and reduce-scatters the dK+dV partials to their owners.
#include <numeric>

#include "planner/schedules/common.h"
#include "planner/schedules/expand.h"

namespace meshplan::planner {
namespace {

// Local block first (it needs no gathered data), then the other shards after the gather.
void EmitBlocks(RankProgram& prog, const PlanContext& ctx, const ShardLayout& layout, Phase phase,
                int64_t rank, std::optional<uint32_t> gather) {
  const int64_t p = layout.num_shards;
  for (int64_t k = 0; k < p; ++k) {
    const int64_t j = (rank + k) % p;
    sched::EmitCompute(prog, ctx, layout, phase, rank, j, 0, ctx.workload.q_heads, -1,
                       k == 0 ? std::vector<uint32_t>{} : sched::Deps({gather}));
  }
}

}  // namespace

Result<Schedule> ExpandAllGatherKV(const PlanContext& ctx, const SchemeParams& params) {
  const int64_t p = ctx.num_ranks;
  const Workload& w = ctx.workload;
  const ShardLayout layout{params.layout, w.seq_len, p, 1};
  MESHPLAN_RETURN_IF_ERROR(sched::CheckGrid(ctx, params, layout, 1));

  Schedule s = sched::NewSchedule(ctx, params, layout, static_cast<size_t>(2 * p + 4));
  s.groups.emplace_back(static_cast<size_t>(p));
  std::iota(s.groups[0].begin(), s.groups[0].end(), 0);
  // All-gather of a shard x sends (p-1)*x; reduce-scatter leaving a shard x sends (p-1)*x.
  const int64_t gather_bytes = sched::WholeBytes(static_cast<double>(p - 1) * ctx.shard.kv);
  const int64_t scatter_bytes =
      sched::WholeBytes(static_cast<double>(p - 1) * ctx.shard.dkv_partial);
  for (int64_t r = 0; r < p; ++r) {
    RankProgram& prog = s.ranks[r];
    if (HasForward(w.pass)) {
      auto gather = sched::EmitCollective(prog, s, OpKind::kAllGather, Phase::kForward, 0,
                                          kTensorKV, gather_bytes, {});
      if (gather) prog.ops[*gather].kv_shard = static_cast<int32_t>(r);
      EmitBlocks(prog, ctx, layout, Phase::kForward, r, gather);
    }
    if (HasBackward(w.pass)) {
      std::optional<uint32_t> gather;
      if (!params.cache_forward) {
        gather = sched::EmitCollective(prog, s, OpKind::kAllGather, Phase::kBackward, 0, kTensorKV,
                                       gather_bytes, {});
        if (gather) prog.ops[*gather].kv_shard = static_cast<int32_t>(r);
      }
      EmitBlocks(prog, ctx, layout, Phase::kBackward, r, gather);
      auto scatter = sched::EmitCollective(
          prog, s, OpKind::kReduceScatter, Phase::kBackward, 0, kTensorDKV, scatter_bytes,
          sched::Deps({sched::LastOnStream(prog, StreamId::kCompute)}));
      if (scatter) prog.ops[*scatter].kv_shard = static_cast<int32_t>(r);
    }
  }
  return s;
}

}  // namespace meshplan::planner
