// All-gather KV (Llama 3 context parallelism): gather every K,V shard, attend locally,
// reduce-scatter dK,dV in the backward (docs/schemes.md). Expansion (docs/schedules.md): one
// all-gather of K and V over all ranks, local attention of the rank's Q shard against every KV
// shard; the backward gathers KV again (unless cached) and reduce-scatters the dK+dV partials to
// their owners.
#include <numeric>

#include "planner/compute_model.h"
#include "planner/schedule_builder.h"
#include "planner/schemes/common.h"
#include "planner/schemes/registry.h"

namespace meshplan::planner::schemes {
namespace {

constexpr std::string_view kName = "allgather-kv";
// Every rank's queries against the gathered keys: on packed documents, each of its two chunks of a
// document in a call of its own against the keys up to its end, as TransformerEngine's all-gather
// runs them (core/sequence/layout.h); its estimate and its schedule state the same.
constexpr KernelCalls kAllGatherCalls = KernelCalls::kGatheredKeys;

class AllGatherKVStrategy final : public Strategy {
 public:
  Scheme scheme() const override { return Scheme(kName); }
  std::string_view summary() const override {
    return "all-gather K,V, attend locally, reduce-scatter dK,dV (Llama 3 context parallelism)";
  }
  bool OffersManyRangeLayouts() const override { return true; }
  std::vector<RankDim> RankDims(const SchemeParams& p) const override { return {{"cp", p.ring}}; }
  std::string DescribeDegrees(const SchemeParams&) const override { return ""; }
  std::vector<SchemeParams> Enumerate(const PlanContext& ctx) const override;
  Estimate Evaluate(const PlanContext& ctx, const SchemeParams& params) const override;
  // The proof, as Ring's (ring.cc): rank r's blocks are (r, r + k) in k order, its one all-gather
  // and one reduce-scatter run over the group of every rank in rank order; a translation r -> r + s
  // maps block (r, r + k) to (r + s, r + s + k), one permutation of both shards, and the group onto
  // itself rotated (a ring collective keeps its neighbours), so the programs agree when the
  // layout's blocks are proven equal in work (BlocksEqualInWork).
  Status ProveTranslationInvariance(const PlanContext& ctx,
                                    const SchemeParams& params) const override {
    return BlocksEqualInWork(ctx.LayoutFor(params.layout, ctx.num_ranks, 1), ctx.workload.mask);
  }
  // Megatron's all_gather (TransformerEngine: the DualChunkSwap split, windows allowed).
  FrameworkRun RunIn(Framework f, const SchemeParams& p, const Workload& w,
                     const FrameworkJob& job) const override {
    namespace rules = framework_rules;
    if (f == Framework::kMegatron) {
      if (auto no =
              FirstRefusal({rules::MegatronMask(w, "its all_gather", true),
                            rules::MegatronSequence(w, job), rules::MegatronDocuments(w, job)},
                           {rules::MegatronLayout(p, w), rules::NoForwardCache(p, w)})) {
        return *no;
      }
      return MegatronRun(w, job, "all_gather");
    }
    return Strategy::RunIn(f, p, w, job);
  }
  Result<Schedule> Expand(const PlanContext& ctx, const SchemeParams& params) const override;
};

std::vector<SchemeParams> AllGatherKVStrategy::Enumerate(const PlanContext& ctx) const {
  SchemeParams p;
  p.scheme = scheme();
  p.ring = ctx.num_ranks;
  std::vector<SchemeParams> out;
  AddVariants(ctx, p, RankDims(p), SearchLayouts(ctx.workload.mask, false), Placements::kCanonical,
              &out);
  return out;
}

Estimate AllGatherKVStrategy::Evaluate(const PlanContext& ctx, const SchemeParams& p) const {
  const int64_t ranks = ctx.num_ranks;
  if (std::string why = WholeClusterProblem(ctx, p, "all-gather"); !why.empty())
    return Invalid(p, why);
  const ShardLayout layout = ctx.LayoutFor(p.layout, ranks, 1);
  if (std::string why = LayoutOrPlacementProblem(p, layout, ctx.workload.mask); !why.empty())
    return Invalid(p, why);

  Estimate e = ValidEstimate(p);
  const Workload& w = ctx.workload;
  const ShardBytes& s = ctx.shard;
  const Placement placement(RankDims(p), p.placement);
  const std::vector<int64_t>& pairs = ctx.RowPairsFor(layout);
  SetFlops(e, ctx, pairs, w.q_heads);
  const double fwd_flops = ctx.KernelForwardFlopsMax(pairs, layout, 1, w.q_heads);
  const KernelShape shape = ctx.ShapeOf(layout, w.q_heads, kAllGatherCalls);
  const double compute_s = KernelSeconds(ctx.topology.gpu, w.dtype, w.head_dim, fwd_flops, shape,
                                         layout.LaunchesPerBlock());
  Traffic traffic(ranks, ctx.topology.num_levels());
  CommModel& comm = *ctx.comm;
  double fwd_bytes = 0, bwd_bytes = 0;
  if (HasForward(w.pass)) {
    AddExposed(e, "fwd all-gather K,V", comm.RingCollective(placement, 0, s.kv, &traffic));
    AddCompute(e, "fwd attention on gathered K,V", compute_s);
    fwd_bytes = (ranks - 1) * s.kv;
  }
  if (HasBackward(w.pass)) {
    if (!p.cache_forward) {
      AddExposed(e, "bwd all-gather K,V", comm.RingCollective(placement, 0, s.kv, &traffic));
    }
    AddCompute(e, "bwd attention",
               ctx.BackwardSeconds(compute_s, layout.LaunchesPerBlock(), shape));
    AddExposed(e, "bwd reduce-scatter dK,dV",
               comm.RingCollective(placement, 0, s.dkv_partial, &traffic));
    bwd_bytes = (ranks - 1) * ((p.cache_forward ? 0.0 : s.kv) + s.dkv_partial);
  }
  SetTraffic(e, traffic, fwd_bytes, bwd_bytes);
  // Full-length K,V (P shards) during attention; the backward also holds P partial dK,dV.
  SetMemory(e, ctx, (ranks - 1) * s.kv + s.o_partial + s.lse,
            (p.cache_forward ? 0.0 : (ranks - 1) * s.kv) + ranks * s.dkv_partial + s.dq_partial,
            (ranks - 1) * s.kv);
  FinishTime(e);
  return e;
}

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

Result<Schedule> AllGatherKVStrategy::Expand(const PlanContext& ctx,
                                             const SchemeParams& params) const {
  const int64_t p = ctx.num_ranks;
  const Workload& w = ctx.workload;
  const ShardLayout layout = ctx.LayoutFor(params.layout, p, 1);
  MESHPLAN_RETURN_IF_ERROR(sched::CheckGrid(ctx, params, RankDims(params), layout, 1));

  Schedule s = sched::NewSchedule(ctx, params, layout, static_cast<size_t>(2 * p + 4));
  s.kernel_calls = kAllGatherCalls;
  s.groups.emplace_back(static_cast<size_t>(p));
  std::iota(s.groups[0].begin(), s.groups[0].end(), 0);
  // All-gather of a shard x sends (p-1)*x; reduce-scatter leaving a shard x sends (p-1)*x.
  const int64_t gather_bytes = sched::WholeBytes(static_cast<double>(p - 1) * ctx.shard.kv);
  const int64_t scatter_bytes =
      sched::WholeBytes(static_cast<double>(p - 1) * ctx.shard.dkv_partial);
  for (int64_t r = 0; r < p; ++r) {
    if (ctx.expand_rank && !ctx.expand_rank(r)) continue;  // proven symmetric: not replayed
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
    if (!sched::HandOver(ctx, r, prog)) return sched::ExpansionStopped();
  }
  return s;
}

}  // namespace

std::unique_ptr<Strategy> NewAllGatherKVStrategy() {
  return std::make_unique<AllGatherKVStrategy>();
}

}  // namespace meshplan::planner::schemes
