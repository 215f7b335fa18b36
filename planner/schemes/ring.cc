// Ring-Attention: KV shards travel a ring of all P ranks (docs/schemes.md). Expansion
// (docs/schedules.md, "Ring"): P steps per pass; KV moves rank r -> r-1, so rank r holds KV shard
// (r + s) mod P at step s; the backward adds the owner-last dK+dV chain. The cached backward
// runs its own shard last, so every dK+dV hop overlaps a block (the order Mesh's greedy picks
// for a 1 x P tile: docs/mesh-attention.md).
#include <numeric>

#include "planner/patterns/ring_pass.h"
#include "planner/schedule_builder.h"
#include "planner/schemes/common.h"
#include "planner/schemes/registry.h"

namespace meshplan::planner::schemes {
namespace {

constexpr std::string_view kName = "ring";

class RingStrategy final : public Strategy {
 public:
  Scheme scheme() const override { return Scheme(kName); }
  std::string_view summary() const override {
    return "Ring-Attention: K,V shards travel a ring of all GPUs (contiguous, zigzag or striped "
           "layout)";
  }
  bool OffersManyRangeLayouts() const override { return true; }
  std::vector<RankDim> RankDims(const SchemeParams& p) const override { return {{"cp", p.ring}}; }
  std::string DescribeDegrees(const SchemeParams&) const override { return ""; }
  std::vector<SchemeParams> Enumerate(const PlanContext& ctx) const override;
  Estimate Evaluate(const PlanContext& ctx, const SchemeParams& params) const override;
  // The proof: rank r's program reads r only through its ring neighbours r +- 1, its Q shard r
  // and its K,V shards r + k at step k (k = 0 .. P-1), everything else (messages, tags, steps)
  // being the same for every rank. A translation r -> r + s moves the neighbours with it and
  // maps block (r, r + k) to (r + s, r + s + k): one permutation of the shards applied to both,
  // which keeps a block's work when the layout's blocks are uniform or depend only on whether
  // their shards are the same (BlocksEqualInWork).
  Status ProveTranslationInvariance(const PlanContext& ctx,
                                    const SchemeParams& params) const override {
    return BlocksEqualInWork(ctx.LayoutFor(params.layout, ctx.num_ranks, 1), ctx.workload.mask);
  }
  // Megatron's p2p ring (TransformerEngine's DualChunkSwap split: zigzag) and yunchang's rings
  // with Ulysses degree 1 (docs/frameworks.md).
  FrameworkRun RunIn(Framework f, const SchemeParams& p, const Workload& w,
                     const FrameworkJob& job) const override {
    namespace rules = framework_rules;
    if (f == Framework::kMegatron) {
      if (auto no = FirstRefusal(
              {rules::MegatronWindow(w, "p2p"), rules::MegatronMask(w, "its p2p ring", false),
               rules::MegatronSequence(w, job), rules::MegatronDocuments(w, job)},
              {rules::MegatronLayout(p, w), rules::NoForwardCache(p, w)})) {
        return *no;
      }
      return MegatronRun(w, job, "p2p");
    }
    if (f == Framework::kYunchang) {
      if (auto no = FirstRefusal({rules::YunchangMask(w)}, {rules::YunchangRing(p, w)})) return *no;
      return Runs(YunchangSettings(1, job.cp_gpus, true, p.layout, job));
    }
    return Strategy::RunIn(f, p, w, job);
  }
  Result<Schedule> Expand(const PlanContext& ctx, const SchemeParams& params) const override;
};

std::vector<SchemeParams> RingStrategy::Enumerate(const PlanContext& ctx) const {
  SchemeParams p;
  p.scheme = scheme();
  p.ring = ctx.num_ranks;
  std::vector<SchemeParams> out;
  AddVariants(ctx, p, RankDims(p), SearchLayouts(ctx.workload.mask, /*every_layout=*/true),
              Placements::kCanonical, &out);
  return out;
}

Estimate RingStrategy::Evaluate(const PlanContext& ctx, const SchemeParams& p) const {
  const int64_t ranks = ctx.num_ranks;
  if (std::string why = WholeClusterProblem(ctx, p, "ring"); !why.empty()) return Invalid(p, why);
  const ShardLayout layout = ctx.LayoutFor(p.layout, ranks, 1);
  if (std::string why = LayoutOrPlacementProblem(p, layout, ctx.workload.mask); !why.empty())
    return Invalid(p, why);

  Estimate e = ValidEstimate(p);
  const Workload& w = ctx.workload;
  const ShardBytes& s = ctx.shard;
  const Placement placement(RankDims(p), p.placement);
  SetFlops(e, ctx, ctx.RowPairsFor(layout), w.q_heads);

  const double step_s = RingBlockSeconds(ctx, layout, w.q_heads);
  const KernelShape shape = ctx.ShapeOf(layout, w.q_heads);
  Traffic traffic(ranks, ctx.topology.num_levels());
  double fwd_bytes = 0, bwd_bytes = 0;
  if (HasForward(w.pass)) {
    fwd_bytes = RingPass(e, ctx, placement, layout, 0, Phase::kForward, false, false, step_s, shape,
                         traffic);
  }
  if (HasBackward(w.pass)) {
    bwd_bytes = RingPass(e, ctx, placement, layout, 0, Phase::kBackward, p.cache_forward,
                         /*own_shard_last=*/true, step_s, shape, traffic);
  }
  SetTraffic(e, traffic, fwd_bytes, bwd_bytes);
  // Buffers: KV being used + KV arriving; fp32 O accumulator; backward adds dK,dV in and out
  // and the dQ accumulator. Cache keeps the P-1 other KV shards from the forward.
  SetMemory(e, ctx, 2 * s.kv + s.o_partial + s.lse,
            (p.cache_forward ? 0.0 : 2 * s.kv) + 2 * s.dkv_partial + s.dq_partial,
            (ranks - 1) * s.kv);
  FinishTime(e);
  return e;
}

Result<Schedule> RingStrategy::Expand(const PlanContext& ctx, const SchemeParams& params) const {
  const int64_t p = ctx.num_ranks;
  const Workload& w = ctx.workload;
  const ShardLayout layout = ctx.LayoutFor(params.layout, p, 1);
  MESHPLAN_RETURN_IF_ERROR(sched::CheckGrid(ctx, params, RankDims(params), layout, 1));

  Schedule s = sched::NewSchedule(ctx, params, layout, static_cast<size_t>(7 * p));
  std::vector<int32_t> ring(static_cast<size_t>(p));
  std::iota(ring.begin(), ring.end(), 0);
  // One pass description for every rank (its P-long maps are not copied per rank).
  sched::RingPass pass;
  pass.n = p;
  pass.rank_of = std::move(ring);
  pass.kv_shard_of.assign(pass.rank_of.begin(), pass.rank_of.end());
  pass.head_begin = 0;
  pass.head_count = w.q_heads;
  pass.kv_bytes = sched::WholeBytes(ctx.shard.kv);
  pass.dkv_bytes = sched::WholeBytes(ctx.shard.dkv_partial);
  for (int64_t r = 0; r < p; ++r) {
    if (ctx.expand_rank && !ctx.expand_rank(r)) continue;  // proven symmetric: not replayed
    pass.pos = r;
    pass.q_shard = r;
    if (HasForward(w.pass)) {
      pass.phase = Phase::kForward;
      pass.move_kv = true;
      pass.dkv_chain = false;
      pass.own_shard_last = false;
      sched::EmitRingPass(s.ranks[r], ctx, layout, pass);
    }
    if (HasBackward(w.pass)) {
      pass.phase = Phase::kBackward;
      pass.move_kv = !params.cache_forward;  // cache: the forward left every KV shard here
      pass.dkv_chain = true;
      pass.own_shard_last = params.cache_forward;  // chain order: the last hop hides behind it
      sched::EmitRingPass(s.ranks[r], ctx, layout, pass);
    }
    if (!sched::HandOver(ctx, r, s.ranks[r])) return sched::ExpansionStopped();
  }
  return s;
}

}  // namespace

std::unique_ptr<Strategy> NewRingStrategy() { return std::make_unique<RingStrategy>(); }

}  // namespace meshplan::planner::schemes
