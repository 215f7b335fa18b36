#include "planner/schedule_builder.h"

#include <cmath>

namespace meshplan::planner::sched {

int64_t WholeBytes(double bytes) { return std::llround(bytes); }

int64_t ScaledBytes(double bytes, int64_t num, int64_t den) {
  // bytes is an integer below 2^53 and divisible by den in every use; round the exact quotient.
  return std::llround(bytes * static_cast<double>(num) / static_cast<double>(den));
}

std::vector<uint32_t> Deps(std::initializer_list<std::optional<uint32_t>> deps) {
  std::vector<uint32_t> out;
  out.reserve(deps.size());
  for (const auto& d : deps) {
    if (d) out.push_back(*d);
  }
  return out;
}

std::optional<uint32_t> EmitCompute(RankProgram& prog, const PlanContext& ctx,
                                    const ShardLayout& layout, Phase phase, int64_t q_shard,
                                    int64_t kv_shard, int64_t head_begin, int64_t head_count,
                                    int64_t step, const std::vector<uint32_t>& deps) {
  const BlockWork work = layout.Work(ctx.counter, q_shard, kv_shard);
  const int64_t pairs = work.pairs;
  if (pairs == 0) return std::nullopt;
  Op op;
  op.kind = OpKind::kCompute;
  op.phase = phase;
  op.stream = StreamId::kCompute;
  op.q_shard = static_cast<int32_t>(q_shard);
  op.kv_shard = static_cast<int32_t>(kv_shard);
  op.head_begin = static_cast<int32_t>(head_begin);
  op.head_count = static_cast<int32_t>(head_count);
  op.step = static_cast<int32_t>(step);
  op.flops = ctx.ForwardFlops(pairs, head_count) *
             (phase == Phase::kBackward ? kBackwardFlopsFactor : 1.0);
  op.cut_rows_per_pair = static_cast<float>(work.CutRowsPerPair());
  return prog.Add(op, deps);
}

std::optional<uint32_t> EmitCollective(RankProgram& prog, const Schedule& schedule, OpKind kind,
                                       Phase phase, int32_t group, uint16_t tensors, int64_t bytes,
                                       const std::vector<uint32_t>& deps, A2ADirection dir) {
  if (schedule.groups[group].size() <= 1) return std::nullopt;
  Op op;
  op.kind = kind;
  op.phase = phase;
  op.stream = StreamId::kCollective;
  op.a2a = dir;
  op.tensors = tensors;
  op.group = group;
  op.bytes = bytes;
  return prog.Add(op, deps);
}

std::optional<uint32_t> LastOnStream(const RankProgram& prog, StreamId stream) {
  for (size_t i = prog.ops.size(); i-- > 0;) {
    if (prog.ops[i].stream == stream) return static_cast<uint32_t>(i);
  }
  return std::nullopt;
}

Status CheckGrid(const PlanContext& ctx, const SchemeParams& params,
                 const std::vector<RankDim>& dims, const ShardLayout& layout, int64_t ulysses) {
  int64_t ranks = 1;
  std::string grid;
  for (const RankDim& d : dims) {
    if (d.size < 1) return Status::Invalid("rank dimension '" + d.name + "' must be at least 1");
    ranks *= d.size;
    grid += (grid.empty() ? "" : " x ") + d.name + "=" + std::to_string(d.size);
  }
  if (ranks != ctx.num_ranks) {
    return Status::Invalid(std::string(SchemeName(params.scheme)) + " rank grid " + grid + " has " +
                           std::to_string(ranks) + " ranks, but the cluster has " +
                           std::to_string(ctx.num_ranks) + " GPUs");
  }
  const Workload& w = ctx.workload;
  if (ulysses < 1 || w.kv_heads % ulysses != 0 || w.q_heads % ulysses != 0) {
    return Status::Invalid("Ulysses degree " + std::to_string(ulysses) + " does not divide the " +
                           std::to_string(w.kv_heads) + " KV heads and " +
                           std::to_string(w.q_heads) + " query heads");
  }
  return layout.Validate(w.mask);
}

Schedule NewSchedule(const PlanContext& ctx, const SchemeParams& params, const ShardLayout& layout,
                     size_t ops_per_rank) {
  Schedule s;
  s.scheme = params.scheme;
  s.num_ranks = ctx.num_ranks;
  s.layout = layout;
  s.ranks.resize(static_cast<size_t>(ctx.num_ranks));
  if (ctx.rank_done) return s;
  for (RankProgram& r : s.ranks) {
    r.ops.reserve(ops_per_rank);
    r.deps.reserve(2 * ops_per_rank);
  }
  return s;
}

bool HandOver(const PlanContext& ctx, int64_t rank, RankProgram& program) {
  return !ctx.rank_done || ctx.rank_done(rank, program);
}

Status ExpansionStopped() {
  return Status::Invalid("the expansion was stopped by its consumer (PlanContext::rank_done)");
}

}  // namespace meshplan::planner::sched
