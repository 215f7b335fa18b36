// ATTENTION2D: each rank computes an a x b tile of the attention matrix (the Mesh assignment),
// moving Q and K,V with all-gathers and partial outputs with reduce-scatters (docs/schemes.md).
// Expansion (docs/schedules.md): rank g = x + a*y (x: q coordinate, y: kv coordinate) computes
// the a x b blocks (Q_i, KV_j) with i in its Q group {a*y .. a*y+a-1} and j = x (mod a), i.e. the
// Mesh assignment AM[i][j] = a*floor(i/a) + (j mod a). Data moves only in ring collectives:
// all-gather Q over the Q group and KV over the KV group, reduce-scatter O+LSE (forward) or dQ
// and dK+dV (backward) back to the owners.
#include "planner/compute_model.h"
#include "planner/schedule_builder.h"
#include "planner/schemes/common.h"
#include "planner/schemes/registry.h"

namespace meshplan::planner::schemes {
namespace {

constexpr std::string_view kName = "attention2d";

// The ATTENTION2D pass: all-gathers over dims q and kv, the tile's blocks, reduce-scatters, not
// overlapped with the compute. Adds its stages and traffic to the estimate and returns the bytes
// one rank sends (the expansion below emits the same collectives).
double Attention2DPass(Estimate& e, const PlanContext& ctx, const Placement& placement, int q_dim,
                       int kv_dim, Phase phase, bool cache, double compute_s, KernelShape shape,
                       Traffic& traffic) {
  const int64_t a = placement.DimSize(q_dim), b = placement.DimSize(kv_dim);
  const ShardBytes& s = ctx.shard;
  CommModel& comm = *ctx.comm;
  if (phase == Phase::kForward) {
    AddExposed(e, "fwd all-gather Q", comm.RingCollective(placement, q_dim, s.q, &traffic));
    AddExposed(e, "fwd all-gather K,V", comm.RingCollective(placement, kv_dim, s.kv, &traffic));
    AddCompute(e, "fwd tile compute", compute_s);
    AddExposed(e, "fwd reduce-scatter O,LSE",
               comm.RingCollective(placement, q_dim, s.o_partial + s.lse, &traffic));
    return static_cast<double>(a - 1) * (s.q + s.o_partial + s.lse) +
           static_cast<double>(b - 1) * s.kv;
  }
  const double q_side = (cache ? 0.0 : s.q) + s.q + 2 * s.lse;
  AddExposed(e, cache ? "bwd all-gather dO,LSE,D" : "bwd all-gather Q,dO,LSE,D",
             comm.RingCollective(placement, q_dim, q_side, &traffic));
  if (!cache)
    AddExposed(e, "bwd all-gather K,V", comm.RingCollective(placement, kv_dim, s.kv, &traffic));
  AddCompute(e, "bwd tile compute", ctx.BackwardSeconds(compute_s, a * b, shape));
  AddExposed(e, "bwd reduce-scatter dQ",
             comm.RingCollective(placement, q_dim, s.dq_partial, &traffic));
  AddExposed(e, "bwd reduce-scatter dK,dV",
             comm.RingCollective(placement, kv_dim, s.dkv_partial, &traffic));
  return static_cast<double>(a - 1) * (q_side + s.dq_partial) +
         static_cast<double>(b - 1) * ((cache ? 0.0 : s.kv) + s.dkv_partial);
}

class Attention2DStrategy final : public Strategy {
 public:
  Scheme scheme() const override { return Scheme(kName); }
  std::string_view summary() const override {
    return "ATTENTION2D: an a x b tile of the attention matrix per GPU, moved by all-gathers and "
           "reduce-scatters";
  }
  std::vector<RankDim> RankDims(const SchemeParams& p) const override { return TileGrid(p); }
  std::string DescribeDegrees(const SchemeParams& p) const override { return TileDegrees(p); }
  std::vector<SchemeParams> Enumerate(const PlanContext& ctx) const override;
  Estimate Evaluate(const PlanContext& ctx, const SchemeParams& params) const override;
  Result<Schedule> Expand(const PlanContext& ctx, const SchemeParams& params) const override;
};

std::vector<SchemeParams> Attention2DStrategy::Enumerate(const PlanContext& ctx) const {
  std::vector<SchemeParams> out;
  SchemeParams p;
  p.scheme = scheme();
  AddTileCandidates(ctx, *this, p, ctx.num_ranks, /*both_reduce_chains=*/false, &out);
  return out;
}

Estimate Attention2DStrategy::Evaluate(const PlanContext& ctx, const SchemeParams& p) const {
  const Workload& w = ctx.workload;
  const int64_t ranks = ctx.num_ranks;
  if (std::string why = TileGridProblem(ctx, p); !why.empty()) return Invalid(p, why);
  const ShardLayout layout{p.layout, w.seq_len, ranks, 1};
  if (std::string why = LayoutOrPlacementProblem(p, layout, w.mask); !why.empty())
    return Invalid(p, why);

  Estimate e = ValidEstimate(p);
  const ShardBytes& s = ctx.shard;
  const int64_t a = p.tile_a, b = p.tile_b;
  const Placement placement(RankDims(p), p.placement);
  const std::vector<int64_t>& pairs = ctx.TilePairsFor(layout, a);
  SetFlops(e, ctx, pairs, w.q_heads);
  const KernelShape shape = ctx.ShapeOf(layout, w.q_heads);
  const double compute_s =
      KernelSeconds(ctx.topology.gpu, w.dtype, w.head_dim,
                    ctx.KernelForwardFlopsMax(pairs, layout, a, w.q_heads), shape, a * b);
  Traffic traffic(ranks, ctx.topology.num_levels());
  double fwd_bytes = 0, bwd_bytes = 0;
  if (HasForward(w.pass)) {
    fwd_bytes =
        Attention2DPass(e, ctx, placement, 0, 1, Phase::kForward, false, compute_s, shape, traffic);
  }
  if (HasBackward(w.pass)) {
    bwd_bytes = Attention2DPass(e, ctx, placement, 0, 1, Phase::kBackward, p.cache_forward,
                                compute_s, shape, traffic);
  }
  SetTraffic(e, traffic, fwd_bytes, bwd_bytes);
  // Gathered a Q shards and b KV shards; a partial (O, LSE) accumulators; the backward gathers
  // dO, LSE, D too and holds a partial dQ and b partial dK,dV before the reduce-scatters.
  SetMemory(e, ctx, (a - 1) * s.q + (b - 1) * s.kv + a * (s.o_partial + s.lse),
            (a - 1) * ((p.cache_forward ? 0.0 : s.q) + s.q + 2 * s.lse) +
                (p.cache_forward ? 0.0 : (b - 1) * s.kv) + a * s.dq_partial + b * s.dkv_partial,
            (a - 1) * s.q + (b - 1) * s.kv);
  FinishTime(e);
  return e;
}

// Own block first, then the rest of the tile in ring order. In the forward the own block needs
// no gathered data. In the backward every block waits for the Q-side gather: it follows the
// forward's reduce-scatter on the collective stream, which is what makes the own shard's O and
// LSE final (D = rowsum(dO * O) and the backward's P = exp(S - LSE) need the final values).
void EmitTile(RankProgram& prog, const PlanContext& ctx, const ShardLayout& layout, Phase phase,
              int64_t a, int64_t b, int64_t rank, std::optional<uint32_t> q_gather,
              std::optional<uint32_t> kv_gather) {
  const bool backward = phase == Phase::kBackward;
  const int64_t n = a * b, x = rank % a, base = rank - x;
  for (int64_t dy = 0; dy < b; ++dy) {
    const int64_t j = (rank + dy * a) % n;  // KV group member shards, own first
    for (int64_t dx = 0; dx < a; ++dx) {
      const int64_t i = base + (x + dx) % a;  // Q group member shards, own first
      sched::EmitCompute(prog, ctx, layout, phase, i, j, 0, ctx.workload.q_heads, -1,
                         sched::Deps({dx > 0 || backward ? q_gather : std::nullopt,
                                      dy > 0 ? kv_gather : std::nullopt}));
    }
  }
}

Result<Schedule> Attention2DStrategy::Expand(const PlanContext& ctx,
                                             const SchemeParams& params) const {
  const int64_t a = params.tile_a, b = params.tile_b, p = ctx.num_ranks;
  const Workload& w = ctx.workload;
  const ShardLayout layout{params.layout, w.seq_len, p, 1};
  MESHPLAN_RETURN_IF_ERROR(sched::CheckGrid(ctx, params, RankDims(params), layout, 1));
  const ShardBytes& sb = ctx.shard;
  const auto times = [](int64_t k, double bytes) {
    return sched::WholeBytes(static_cast<double>(k) * bytes);
  };
  // Per-rank bytes (docs/schemes.md, attention2d row): all-gather and reduce-scatter over g ranks
  // of a shard x both send (g-1)*x.
  const int64_t fwd_q = times(a - 1, sb.q), kv = times(b - 1, sb.kv);
  const int64_t fwd_o = times(a - 1, sb.o_partial + sb.lse);
  const int64_t bwd_q =
      params.cache_forward ? times(a - 1, sb.q + 2 * sb.lse) : times(a - 1, 2 * sb.q + 2 * sb.lse);
  const uint16_t bwd_q_tensors = static_cast<uint16_t>((params.cache_forward ? 0 : kTensorQ) |
                                                       kTensorDO | kTensorLse | kTensorD);
  const int64_t bwd_dq = times(a - 1, sb.dq_partial), bwd_dkv = times(b - 1, sb.dkv_partial);

  Schedule s = sched::NewSchedule(ctx, params, layout, static_cast<size_t>(2 * a * b + 8));
  // Groups 0..b-1: Q groups (by kv coordinate y); b..b+a-1: KV groups (by q coordinate x).
  s.groups.resize(static_cast<size_t>(a + b));
  for (int64_t y = 0; y < b; ++y) {
    for (int64_t x = 0; x < a; ++x) s.groups[y].push_back(static_cast<int32_t>(x + a * y));
  }
  for (int64_t x = 0; x < a; ++x) {
    for (int64_t y = 0; y < b; ++y) s.groups[b + x].push_back(static_cast<int32_t>(x + a * y));
  }
  for (int64_t g = 0; g < p; ++g) {
    RankProgram& prog = s.ranks[g];
    const int32_t qg = static_cast<int32_t>(g / a), kvg = static_cast<int32_t>(b + g % a);
    auto collective = [&](OpKind kind, Phase phase, int32_t group, uint16_t tensors, int64_t bytes,
                          const std::vector<uint32_t>& deps) {
      auto op = sched::EmitCollective(prog, s, kind, phase, group, tensors, bytes, deps);
      if (op) {
        const bool q_side = group < b;
        (q_side ? prog.ops[*op].q_shard : prog.ops[*op].kv_shard) = static_cast<int32_t>(g);
      }
      return op;
    };
    if (HasForward(w.pass)) {
      auto q = collective(OpKind::kAllGather, Phase::kForward, qg, kTensorQ, fwd_q, {});
      auto k = collective(OpKind::kAllGather, Phase::kForward, kvg, kTensorKV, kv, {});
      EmitTile(prog, ctx, layout, Phase::kForward, a, b, g, q, k);
      collective(OpKind::kReduceScatter, Phase::kForward, qg, kTensorO | kTensorLse, fwd_o,
                 sched::Deps({sched::LastOnStream(prog, StreamId::kCompute)}));
    }
    if (HasBackward(w.pass)) {
      auto q = collective(OpKind::kAllGather, Phase::kBackward, qg, bwd_q_tensors, bwd_q, {});
      std::optional<uint32_t> k;
      if (!params.cache_forward)
        k = collective(OpKind::kAllGather, Phase::kBackward, kvg, kTensorKV, kv, {});
      EmitTile(prog, ctx, layout, Phase::kBackward, a, b, g, q, k);
      const auto done = sched::Deps({sched::LastOnStream(prog, StreamId::kCompute)});
      collective(OpKind::kReduceScatter, Phase::kBackward, qg, kTensorDQ, bwd_dq, done);
      collective(OpKind::kReduceScatter, Phase::kBackward, kvg, kTensorDKV, bwd_dkv, done);
    }
    if (!sched::HandOver(ctx, g, prog)) return sched::ExpansionStopped();
  }
  return s;
}

}  // namespace

std::unique_ptr<Strategy> NewAttention2DStrategy() {
  return std::make_unique<Attention2DStrategy>();
}

}  // namespace meshplan::planner::schemes
