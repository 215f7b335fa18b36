#include "planner/schemes/registry.h"

namespace meshplan::planner::schemes {

std::span<const SchemeEntry> Registry() {
  static constexpr SchemeEntry kTable[] = {
      {Scheme::kRing, NewRingStrategy},
      {Scheme::kAllGatherKV, NewAllGatherKVStrategy},
      {Scheme::kUlysses, NewUlyssesStrategy},
      {Scheme::kUsp, NewUspStrategy},
      {Scheme::kLoongTrain, NewLoongTrainStrategy},
      {Scheme::kAttention2D, NewAttention2DStrategy},
      {Scheme::kMesh, NewMeshStrategy},
      {Scheme::kMeshUlysses, NewMeshUlyssesStrategy},
      {Scheme::kAttention2DOverlap, NewAttention2DOverlapStrategy},
  };
  return kTable;
}

}  // namespace meshplan::planner::schemes

namespace meshplan::planner {

std::unique_ptr<Strategy> MakeStrategy(Scheme scheme) {
  for (const schemes::SchemeEntry& entry : schemes::Registry()) {
    if (entry.scheme == scheme) return entry.make();
  }
  return nullptr;
}

}  // namespace meshplan::planner
