// One strategy per scheme: the scheme's whole unit. A strategy knows its scheme's rules and
// nothing about timing engines or GPUs: its name and summary, its rank grid and how its
// parameters read, the checks a plan file's values need, the candidates worth ranking, the
// analytic estimate, and the per-rank schedule that the simulator and the executor consume.
// Each scheme's strategy is one file, planner/schemes/<name>.cc, listed in
// planner/schemes/registry.cc; everything else asks the registry (planner/schemes/registry.h).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/plan/plan.h"
#include "core/plan/schedule.h"
#include "planner/context.h"
#include "planner/estimate.h"
#include "planner/frameworks.h"

namespace meshplan::planner {

class Strategy {
 public:
  virtual ~Strategy() = default;
  // The name plan files, flags and outputs use (lower case, digits and '-').
  virtual Scheme scheme() const = 0;
  // One line for --list-schemes and help texts: what the scheme does, with its paper or system.
  virtual std::string_view summary() const = 0;
  // The rank grid, innermost first in rank numbering (canonical order), e.g. [q, kv].
  virtual std::vector<RankDim> RankDims(const SchemeParams& params) const = 0;
  // The scheme's own parameters in short human form ("a=8 b=32"; "" for none). The registry's
  // DescribeParams adds layout, cache, reduce chain and placement.
  virtual std::string DescribeDegrees(const SchemeParams& params) const = 0;
  // Whether the sequence layout and the reduce chain mean anything to this scheme (they are
  // then shown by DescribeParams).
  virtual bool UsesLayout() const { return true; }
  virtual bool UsesReduceChain() const { return false; }
  // Whether the scheme builds layouts of many ranges a shard: the load-balanced dispatch
  // (core/sequence/balanced_dispatch.h) and doc-zigzag (core/sequence/layout.h); the others (the
  // tiles pair a shard with at most two ranges) refuse layout = balanced or doc-zigzag, naming the
  // schemes that offer them.
  virtual bool OffersManyRangeLayouts() const { return false; }
  // Checks of a plan's parameters that need only the workload (a plan file is read before any
  // cluster is known). A problem names the [scheme] key at fault ("window") and the reason.
  struct ParamProblem {
    std::string key;
    std::string reason;
  };
  virtual std::optional<ParamProblem> CheckParams(const SchemeParams& /*params*/,
                                                  const Workload& /*workload*/) const {
    return std::nullopt;
  }
  // Every parameter choice worth ranking on this cluster (including invalid ones only when no
  // valid one exists, so the reason can be shown).
  virtual std::vector<SchemeParams> Enumerate(const PlanContext& ctx) const = 0;
  // Validity first: an invalid plan comes back with valid = false and a reason.
  virtual Estimate Evaluate(const PlanContext& ctx, const SchemeParams& params) const = 0;
  // REQUIRES: Evaluate(ctx, params).valid
  virtual Result<Schedule> Expand(const PlanContext& ctx, const SchemeParams& params) const = 0;
  // Whether Expand provably commutes with every translation of the rank grid (RankDims; a
  // translation moves one coordinate cyclically by any step): the program of the rank that a
  // translation maps r to is r's program with peers and collective groups mapped by the
  // translation, in every field the replay reads. Ok: proven from the scheme's structure and
  // this plan's layout and mask (a replay may then expand one rank per symmetry class:
  // simulator/rank_symmetry.h), and Expand honours PlanContext::expand_rank. An error says why
  // not; the replay then digests every rank's program to find the symmetry instead.
  // REQUIRES: Evaluate(ctx, params).valid
  virtual Status ProveTranslationInvariance(const PlanContext& ctx,
                                            const SchemeParams& params) const {
    (void)ctx, (void)params;
    return Status::Invalid("no structural proof for " + std::string(scheme().name()));
  }
  // Whether `framework` runs this plan for `workload`, and the settings that run it in `job`
  // (docs/frameworks.md cites each scheme's rules).
  // Framework::kAny runs every plan. Default: no other framework implements the scheme.
  virtual FrameworkRun RunIn(Framework framework, const SchemeParams& params,
                             const Workload& workload, const FrameworkJob& job) const {
    (void)params, (void)workload, (void)job;
    if (framework == Framework::kAny) return {};
    return Refused(std::string(FrameworkTitle(framework)) + " does not implement " +
                   std::string(scheme().name()));
  }
};

// The strategy of `scheme`, from the registry; nullptr for a scheme the registry lacks.
std::unique_ptr<Strategy> MakeStrategy(const Scheme& scheme);

}  // namespace meshplan::planner
