#include "planner/strategy.h"

#include "planner/schemes/strategies.h"

namespace meshplan::planner {

std::unique_ptr<Strategy> MakeStrategy(Scheme scheme) {
  switch (scheme) {
    case Scheme::kRing:
      return std::make_unique<schemes::RingStrategy>();
    case Scheme::kAllGatherKV:
      return std::make_unique<schemes::AllGatherKVStrategy>();
    case Scheme::kUlysses:
      return std::make_unique<schemes::UlyssesStrategy>();
    case Scheme::kUsp:
      return std::make_unique<schemes::UspStrategy>();
    case Scheme::kLoongTrain:
      return std::make_unique<schemes::LoongTrainStrategy>();
    case Scheme::kAttention2D:
      return std::make_unique<schemes::Attention2DStrategy>();
    case Scheme::kMesh:
      return std::make_unique<schemes::MeshStrategy>();
    case Scheme::kMeshUlysses:
      return std::make_unique<schemes::MeshUlyssesStrategy>();
  }
  return nullptr;
}

}  // namespace meshplan::planner
