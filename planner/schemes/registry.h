// The scheme registry: one factory per scheme, each defined in its scheme's own file
// (planner/schemes/<name>.cc, which holds the scheme's enumeration, validity, estimate and
// schedule expansion), and the table MakeStrategy reads (registry.cc).
//
// A new scheme touches: its file, its test, and the registry (its factory below and one line
// in registry.cc's table).
#pragma once

#include <memory>
#include <span>

#include "core/plan.h"
#include "planner/strategy.h"

namespace meshplan::planner::schemes {

std::unique_ptr<Strategy> NewRingStrategy();
std::unique_ptr<Strategy> NewAllGatherKVStrategy();
std::unique_ptr<Strategy> NewUlyssesStrategy();
std::unique_ptr<Strategy> NewUspStrategy();
std::unique_ptr<Strategy> NewLoongTrainStrategy();
std::unique_ptr<Strategy> NewAttention2DStrategy();
std::unique_ptr<Strategy> NewMeshStrategy();
std::unique_ptr<Strategy> NewMeshUlyssesStrategy();
std::unique_ptr<Strategy> NewAttention2DOverlapStrategy();

struct SchemeEntry {
  Scheme scheme;
  std::unique_ptr<Strategy> (*make)();
};
// Every scheme once, in Scheme's declaration order.
std::span<const SchemeEntry> Registry();

}  // namespace meshplan::planner::schemes
