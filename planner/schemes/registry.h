// The scheme registry: the one list of schemes. Each scheme is one unit, its file
// planner/schemes/<name>.cc (name, summary, rank grid, parameter checks, enumeration, estimate,
// schedule expansion), exposing only a factory that registry.cc's table lists. Everything that
// names, lists, parses or describes schemes asks here, so a new scheme touches its file, its
// test and one line of registry.cc (docs/architecture.md, "Adding a scheme").
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"
#include "core/plan/plan.h"
#include "core/sequence/layout.h"
#include "core/sequence/mask.h"
#include "planner/strategy.h"

namespace meshplan::planner {

// Every scheme once, in the registry's order (the order of help texts, charts and searches).
std::span<const Scheme> AllSchemes();
// The registered strategy of `scheme` (shared, stateless); nullptr for an unknown scheme.
const Strategy* FindStrategy(const Scheme& scheme);
// A scheme name as flags and plan files write it; an unknown name lists the known ones.
Result<Scheme> ParseScheme(std::string_view text);
// The names joined for prose: "ring, allgather-kv, ... or attention2d-o".
std::string SchemeNamesText();
// One line per scheme, "name  summary", for --list-schemes.
std::string SchemeListing();

// The rank grid of params.scheme (Strategy::RankDims); empty for an unknown scheme.
std::vector<RankDim> RankDims(const SchemeParams& params);
// Short human form of a plan's parameters: "a=8 b=32 zigzag cache place=q>kv".
std::string DescribeParams(const SchemeParams& params);

// The check every scheme's Evaluate shares (here because its refusal names schemes): the scheme
// of params offers the layout (balanced, doc-zigzag: Strategy::OffersManyRangeLayouts; the refusal
// names every scheme that does), the layout fits the sequence and mask, the placement names the
// rank grid's dimensions. Empty when fine, else the reason.
std::string LayoutOrPlacementProblem(const SchemeParams& params, const ShardLayout& layout,
                                     const Mask& mask);

}  // namespace meshplan::planner
