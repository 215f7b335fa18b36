#include "core/plan.h"

#include <algorithm>

namespace meshplan {

std::string_view SchemeName(Scheme scheme) {
  switch (scheme) {
    case Scheme::kRing:
      return "ring";
    case Scheme::kAllGatherKV:
      return "allgather-kv";
    case Scheme::kUlysses:
      return "ulysses";
    case Scheme::kUsp:
      return "usp";
    case Scheme::kLoongTrain:
      return "loongtrain";
    case Scheme::kAttention2D:
      return "attention2d";
    case Scheme::kMesh:
      return "mesh";
    case Scheme::kMeshUlysses:
      return "mesh-ulysses";
    case Scheme::kAttention2DOverlap:
      return "attention2d-o";
  }
  return "ring";
}

Result<Scheme> ParseScheme(std::string_view text) {
  for (Scheme s : kAllSchemes) {
    if (text == SchemeName(s)) return s;
  }
  return Status::Invalid("unknown scheme '" + std::string(text) +
                         "' (expected ring, allgather-kv, ulysses, usp, loongtrain, attention2d, "
                         "attention2d-o, mesh or mesh-ulysses)");
}

std::string_view ReduceChainName(ReduceChain chain) {
  return chain == ReduceChain::kOwnerLast ? "owner-last" : "owner-first";
}

Result<ReduceChain> ParseReduceChain(std::string_view text) {
  if (text == "owner-last") return ReduceChain::kOwnerLast;
  if (text == "owner-first") return ReduceChain::kOwnerFirst;
  return Status::Invalid("unknown reduce chain '" + std::string(text) +
                         "' (expected owner-last or owner-first)");
}

std::vector<RankDim> SchemeParams::RankDims() const {
  switch (scheme) {
    case Scheme::kRing:
    case Scheme::kAllGatherKV:
      return {{"cp", ring}};
    case Scheme::kUlysses:
      return {{"ulysses", ulysses}};
    case Scheme::kUsp:
      return {{"ulysses", ulysses}, {"ring", ring}};
    case Scheme::kLoongTrain:
      return {{"head", ulysses}, {"inner", window}, {"outer", window > 0 ? ring / window : 0}};
    case Scheme::kAttention2D:
    case Scheme::kAttention2DOverlap:
    case Scheme::kMesh:
      return {{"q", tile_a}, {"kv", tile_b}};
    case Scheme::kMeshUlysses:
      return {{"ulysses", ulysses}, {"q", tile_a}, {"kv", tile_b}};
  }
  return {};
}

std::string SchemeParams::Describe() const {
  std::string out;
  auto add = [&](const std::string& part) {
    if (!out.empty()) out += ' ';
    out += part;
  };
  switch (scheme) {
    case Scheme::kRing:
    case Scheme::kAllGatherKV:
    case Scheme::kUlysses:
      break;
    case Scheme::kUsp:
      add("U=" + std::to_string(ulysses) + " R=" + std::to_string(ring));
      break;
    case Scheme::kLoongTrain:
      add("hp=" + std::to_string(ulysses) + " cp=" + std::to_string(ring) + " w=" + std::to_string(window));
      break;
    case Scheme::kAttention2D:
    case Scheme::kAttention2DOverlap:
    case Scheme::kMesh:
      add("a=" + std::to_string(tile_a) + " b=" + std::to_string(tile_b));
      break;
    case Scheme::kMeshUlysses:
      add("U=" + std::to_string(ulysses) + " a=" + std::to_string(tile_a) + " b=" + std::to_string(tile_b));
      break;
  }
  if (scheme != Scheme::kUlysses) add(std::string(LayoutName(layout)));
  if (cache_forward) add("cache");
  if ((scheme == Scheme::kMesh || scheme == Scheme::kMeshUlysses) &&
      reduce_chain == ReduceChain::kOwnerFirst) {
    add("owner-first");
  }
  const auto dims = RankDims();
  if (dims.size() > 1 && placement.size() == dims.size()) {
    std::string p;
    for (size_t i = 0; i < placement.size(); ++i) p += (i ? ">" : "") + placement[i];
    add("place=" + p);
  }
  return out;
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
  for (size_t d = 0; d < sizes_.size(); ++d) gpu += ((rank / rank_stride_[d]) % sizes_[d]) * gpu_stride_[d];
  return gpu;
}

int64_t Placement::RankOfGpu(int64_t gpu) const {
  int64_t rank = 0;
  for (size_t d = 0; d < sizes_.size(); ++d) rank += ((gpu / gpu_stride_[d]) % sizes_[d]) * rank_stride_[d];
  return rank;
}

Status ValidatePlacement(const std::vector<RankDim>& dims, const std::vector<std::string>& placement) {
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
