#include "core/plan/plan.h"

#include <algorithm>

namespace meshplan {

std::string_view ReduceChainName(ReduceChain chain) {
  return chain == ReduceChain::kOwnerLast ? "owner-last" : "owner-first";
}

Result<ReduceChain> ParseReduceChain(std::string_view text) {
  if (text == "owner-last") return ReduceChain::kOwnerLast;
  if (text == "owner-first") return ReduceChain::kOwnerFirst;
  return Status::Invalid("unknown reduce chain '" + std::string(text) +
                         "' (expected owner-last or owner-first)");
}

Placement::Placement(const std::vector<RankDim>& dims, const std::vector<std::string>& placement) {
  const size_t n = dims.size();
  sizes_.resize(n);
  rank_stride_.resize(n);
  gpu_stride_.resize(n);
  for (size_t d = 0; d < n; ++d) {
    sizes_[d] = dims[d].size;
    rank_stride_[d] = num_ranks_;
    num_ranks_ *= dims[d].size;
  }
  int64_t stride = 1;
  for (const std::string& name : placement) {
    for (size_t d = 0; d < n; ++d) {
      if (dims[d].name == name) {
        gpu_stride_[d] = stride;
        stride *= dims[d].size;
      }
    }
  }
}

int64_t Placement::GpuOf(int64_t rank) const {
  int64_t gpu = 0;
  for (size_t d = 0; d < sizes_.size(); ++d)
    gpu += ((rank / rank_stride_[d]) % sizes_[d]) * gpu_stride_[d];
  return gpu;
}

int64_t Placement::RankOfGpu(int64_t gpu) const {
  int64_t rank = 0;
  for (size_t d = 0; d < sizes_.size(); ++d)
    rank += ((gpu / gpu_stride_[d]) % sizes_[d]) * rank_stride_[d];
  return rank;
}

Status ValidatePlacement(const std::vector<RankDim>& dims,
                         const std::vector<std::string>& placement) {
  std::string names;
  for (const RankDim& d : dims) names += (names.empty() ? "" : ", ") + d.name;
  if (placement.size() != dims.size()) {
    return Status::Invalid("placement must list each of [" + names + "] once");
  }
  for (const RankDim& d : dims) {
    if (std::count(placement.begin(), placement.end(), d.name) != 1) {
      return Status::Invalid("placement must list each of [" + names + "] once");
    }
  }
  return Status::Ok();
}

std::vector<std::string> CanonicalPlacement(const std::vector<RankDim>& dims) {
  std::vector<std::string> out;
  for (const RankDim& d : dims) out.push_back(d.name);
  return out;
}

}  // namespace meshplan
