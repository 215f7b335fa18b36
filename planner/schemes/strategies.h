// The eight strategies (one file each in planner/schemes/). Use MakeStrategy() to get one.
#pragma once

#include <vector>

#include "planner/strategy.h"

namespace meshplan::planner::schemes {

class RingStrategy final : public Strategy {
 public:
  Scheme scheme() const override { return Scheme::kRing; }
  std::vector<SchemeParams> Enumerate(const PlanContext& ctx) const override;
  Estimate Evaluate(const PlanContext& ctx, const SchemeParams& params) const override;
  Result<Schedule> Expand(const PlanContext& ctx, const SchemeParams& params) const override;
};

class AllGatherKVStrategy final : public Strategy {
 public:
  Scheme scheme() const override { return Scheme::kAllGatherKV; }
  std::vector<SchemeParams> Enumerate(const PlanContext& ctx) const override;
  Estimate Evaluate(const PlanContext& ctx, const SchemeParams& params) const override;
  Result<Schedule> Expand(const PlanContext& ctx, const SchemeParams& params) const override;
};

class UlyssesStrategy final : public Strategy {
 public:
  Scheme scheme() const override { return Scheme::kUlysses; }
  std::vector<SchemeParams> Enumerate(const PlanContext& ctx) const override;
  Estimate Evaluate(const PlanContext& ctx, const SchemeParams& params) const override;
  Result<Schedule> Expand(const PlanContext& ctx, const SchemeParams& params) const override;
};

class UspStrategy final : public Strategy {
 public:
  Scheme scheme() const override { return Scheme::kUsp; }
  std::vector<SchemeParams> Enumerate(const PlanContext& ctx) const override;
  Estimate Evaluate(const PlanContext& ctx, const SchemeParams& params) const override;
  Result<Schedule> Expand(const PlanContext& ctx, const SchemeParams& params) const override;
};

class LoongTrainStrategy final : public Strategy {
 public:
  Scheme scheme() const override { return Scheme::kLoongTrain; }
  std::vector<SchemeParams> Enumerate(const PlanContext& ctx) const override;
  Estimate Evaluate(const PlanContext& ctx, const SchemeParams& params) const override;
  Result<Schedule> Expand(const PlanContext& ctx, const SchemeParams& params) const override;
};

class Attention2DStrategy final : public Strategy {
 public:
  Scheme scheme() const override { return Scheme::kAttention2D; }
  std::vector<SchemeParams> Enumerate(const PlanContext& ctx) const override;
  Estimate Evaluate(const PlanContext& ctx, const SchemeParams& params) const override;
  Result<Schedule> Expand(const PlanContext& ctx, const SchemeParams& params) const override;
};

class MeshStrategy final : public Strategy {
 public:
  Scheme scheme() const override { return Scheme::kMesh; }
  std::vector<SchemeParams> Enumerate(const PlanContext& ctx) const override;
  Estimate Evaluate(const PlanContext& ctx, const SchemeParams& params) const override;
  Result<Schedule> Expand(const PlanContext& ctx, const SchemeParams& params) const override;
};

class MeshUlyssesStrategy final : public Strategy {
 public:
  Scheme scheme() const override { return Scheme::kMeshUlysses; }
  std::vector<SchemeParams> Enumerate(const PlanContext& ctx) const override;
  Estimate Evaluate(const PlanContext& ctx, const SchemeParams& params) const override;
  Result<Schedule> Expand(const PlanContext& ctx, const SchemeParams& params) const override;
};

}  // namespace meshplan::planner::schemes
