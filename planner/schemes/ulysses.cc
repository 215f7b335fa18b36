// DeepSpeed-Ulysses: all-to-all from sequence shards to head shards, full-sequence attention on
// Hq/P heads, all-to-all back (docs/schemes.md). Expansion (docs/schedules.md): the head-ring
// schedule with a ring of one rank; the compute layout is one contiguous shard cut into U
// sub-shards.
#include "planner/schedule_builder.h"
#include "planner/schemes/common.h"
#include "planner/schemes/head_ring.h"
#include "planner/schemes/registry.h"

namespace meshplan::planner::schemes {
namespace {

constexpr std::string_view kName = "ulysses";

class UlyssesStrategy final : public Strategy {
 public:
  Scheme scheme() const override { return Scheme(kName); }
  std::string_view summary() const override {
    return "DeepSpeed-Ulysses: all-to-all from sequence to head shards and back (needs KV heads >= "
           "GPUs)";
  }
  std::vector<RankDim> RankDims(const SchemeParams& p) const override {
    return {{"ulysses", p.ulysses}};
  }
  std::string DescribeDegrees(const SchemeParams&) const override { return ""; }
  bool UsesLayout() const override { return false; }
  std::optional<ParamProblem> CheckParams(const SchemeParams& p, const Workload& w) const override {
    return HeadDegreeProblem(p, w);
  }
  std::vector<SchemeParams> Enumerate(const PlanContext& ctx) const override;
  Estimate Evaluate(const PlanContext& ctx, const SchemeParams& params) const override;
  Result<Schedule> Expand(const PlanContext& ctx, const SchemeParams& params) const override;
  // Megatron's a2a and yunchang with ring degree 1: both keep the forward's all-to-all results
  // for the backward (cache) (docs/frameworks.md).
  FrameworkRun RunIn(Framework f, const SchemeParams& p, const Workload& w,
                     const FrameworkJob& job) const override {
    namespace rules = framework_rules;
    if (f != Framework::kMegatron && f != Framework::kYunchang)
      return Strategy::RunIn(f, p, w, job);
    const std::string cache = HasBackward(w.pass) && !p.cache_forward
                                  ? "its all-to-all keeps the forward's results for the backward "
                                    "(cache)"
                                  : "";
    if (f == Framework::kMegatron) {
      if (auto no =
              FirstRefusal({rules::MegatronMask(w, "its a2a", true),
                            rules::MegatronSequence(w, job), rules::MegatronDocuments(w, job)},
                           {cache})) {
        return *no;
      }
      return MegatronRun(w, job, "a2a");
    }
    if (auto no = FirstRefusal({}, {cache})) return *no;
    return Runs(YunchangSettings(job.cp_gpus, 1, true, Layout::kContiguous, job));
  }
};

std::vector<SchemeParams> UlyssesStrategy::Enumerate(const PlanContext& ctx) const {
  SchemeParams p;
  p.scheme = scheme();
  p.ulysses = ctx.num_ranks;
  std::vector<SchemeParams> out;
  AddVariants(ctx, p, RankDims(p), {Layout::kContiguous}, Placements::kCanonical, &out);
  return out;
}

Estimate UlyssesStrategy::Evaluate(const PlanContext& ctx, const SchemeParams& p) const {
  const int64_t ranks = ctx.num_ranks;
  const Workload& w = ctx.workload;
  if (p.ulysses != ranks) {
    return Invalid(p, "Ulysses degree " + std::to_string(p.ulysses) + " must equal the " +
                          std::to_string(ranks) + " GPUs");
  }
  if (std::string why = UlyssesProblem(w, ranks); !why.empty()) return Invalid(p, why);
  if (p.layout != Layout::kContiguous) return Invalid(p, "Ulysses uses the contiguous layout");
  const ShardLayout layout{Layout::kContiguous, w.seq_len, 1, ranks};
  if (std::string why = LayoutOrPlacementProblem(p, layout, w.mask); !why.empty())
    return Invalid(p, why);

  return HeadRingEstimate(ctx, p, RankDims(p), layout, /*double_ring=*/false);
}

Result<Schedule> UlyssesStrategy::Expand(const PlanContext& ctx, const SchemeParams& params) const {
  const int64_t u = params.ulysses;
  const ShardLayout layout{Layout::kContiguous, ctx.workload.seq_len, 1, u};
  MESHPLAN_RETURN_IF_ERROR(sched::CheckGrid(ctx, params, RankDims(params), layout, u));
  return ExpandHeadRing(ctx, params, layout, u, /*r=*/1, /*w=*/1);
}

}  // namespace

std::unique_ptr<Strategy> NewUlyssesStrategy() { return std::make_unique<UlyssesStrategy>(); }

}  // namespace meshplan::planner::schemes
