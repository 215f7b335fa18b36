#include "planner/mesh/step_costs.h"

#include <algorithm>

#include "planner/compute_model.h"
#include "planner/patterns/ring_pass.h"

namespace meshplan::planner::mesh {

MessageBytes PhaseMessageBytes(const ShardBytes& s, Phase phase, bool cache) {
  MessageBytes m;
  if (phase == Phase::kForward) {
    m.q_shift = s.q;
    m.kv_shift = s.kv;
    m.q_partial = s.o_partial + s.lse;
    return m;
  }
  m.q_shift = (cache ? 1.0 : 2.0) * s.q + 2.0 * s.lse;
  m.kv_shift = cache ? 0.0 : s.kv;
  m.q_partial = s.dq_partial;
  m.kv_partial = s.dkv_partial;
  return m;
}

// The tile's two rings are the last two dimensions of the rank grid: [q, kv], or [h, q, kv] where
// a head-parallel dimension comes first.
int QDim(const Placement& placement) { return placement.num_dims() - 2; }
int KvDim(const Placement& placement) { return QDim(placement) + 1; }

StepCosts StepTimes::Costs() const {
  auto floor = [](double x) { return std::max(x, 1e-12); };
  return {floor(block), floor(q_shift), floor(kv_shift), floor(q_partial), floor(kv_partial)};
}

StepTimes PhaseStepTimes(const PlanContext& ctx, const SchemeParams& p, const Placement& placement,
                         Phase phase) {
  const Workload& w = ctx.workload;
  const int q_dim = QDim(placement), kv_dim = KvDim(placement);
  const int64_t u = q_dim == 1 ? p.ulysses : 1;  // head-parallel degree
  const ShardLayout layout{p.layout, w.seq_len, ctx.num_ranks / u, u};
  // Block time: the busiest rank's forward work spread over its a*b blocks.
  const std::vector<int64_t>& pairs = ctx.TilePairsFor(layout, p.tile_a);
  const double block_flops = ctx.KernelForwardFlopsMax(pairs, layout, p.tile_a, w.q_heads / u) /
                             static_cast<double>(p.tile_a * p.tile_b);
  StepTimes t;
  const KernelShape shape = ctx.ShapeOf(layout, w.q_heads / u);
  const double forward_block =
      KernelSeconds(ctx.topology.gpu, w.dtype, w.head_dim, block_flops, shape, 1);
  // A Q slot's b blocks merge the partials of all but the first with pairs (ring_pass.h): the
  // busiest rank's merges over its a*b blocks, at most a(b - 1).
  t.block = RingStepSeconds(
      ctx, phase,
      phase == Phase::kForward ? forward_block : ctx.BackwardSeconds(forward_block, 1, shape),
      layout, p.tile_a, p.tile_a * p.tile_b);
  const MessageBytes m = PhaseMessageBytes(ctx.shard, phase, p.cache_forward);
  CommModel& comm = *ctx.comm;
  t.q_shift = comm.RingShift(placement, q_dim, m.q_shift, 1, nullptr);
  t.kv_shift = m.kv_shift > 0 ? comm.RingShift(placement, kv_dim, m.kv_shift, 1, nullptr) : 0.0;
  t.q_partial = comm.RingShift(placement, q_dim, m.q_partial, 1, nullptr);
  t.kv_partial =
      m.kv_partial > 0 ? comm.RingShift(placement, kv_dim, m.kv_partial, 1, nullptr) : 0.0;
  t.shared_link = p.tile_a > 1 && p.tile_b > 1 &&
                  comm.BottleneckLevel(placement, q_dim, m.q_shift) ==
                      comm.BottleneckLevel(placement, kv_dim, std::max(m.kv_shift, m.kv_partial));
  return t;
}

}  // namespace meshplan::planner::mesh
