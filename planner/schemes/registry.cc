#include "planner/schemes/registry.h"

#include <array>

#include "core/base/did_you_mean.h"

namespace meshplan::planner {
namespace schemes {

// Each factory is defined in its scheme's own file (planner/schemes/<name>.cc).
std::unique_ptr<Strategy> NewRingStrategy();
std::unique_ptr<Strategy> NewAllGatherKVStrategy();
std::unique_ptr<Strategy> NewUlyssesStrategy();
std::unique_ptr<Strategy> NewUspStrategy();
std::unique_ptr<Strategy> NewLoongTrainStrategy();
std::unique_ptr<Strategy> NewAttention2DStrategy();
std::unique_ptr<Strategy> NewMeshStrategy();
std::unique_ptr<Strategy> NewMeshUlyssesStrategy();
std::unique_ptr<Strategy> NewAttention2DOverlapStrategy();

namespace {

// The table: one line per scheme. Its order is the order of help texts, charts and searches.
constexpr std::array kFactories = {
    NewRingStrategy, NewAllGatherKVStrategy, NewUlyssesStrategy,
    NewUspStrategy,  NewLoongTrainStrategy,  NewAttention2DStrategy,
    NewMeshStrategy, NewMeshUlyssesStrategy, NewAttention2DOverlapStrategy,
};

// The strategies, built once: they are stateless, so one shared, immutable instance of each
// serves every caller (and every thread).
struct Table {
  std::vector<std::unique_ptr<Strategy>> strategies;
  std::vector<Scheme> schemes;
  Table() {
    for (auto make : kFactories) {
      strategies.push_back(make());
      schemes.push_back(strategies.back()->scheme());
    }
  }
};
const Table& TheTable() {
  static const Table table;
  return table;
}

// The schemes that offer the many-range layouts (balanced, doc-zigzag), joined for prose ("a, b and
// c").
std::string ManyRangeLayoutSchemes() {
  std::vector<std::string> names;
  for (const Scheme& s : AllSchemes()) {
    if (FindStrategy(s)->OffersManyRangeLayouts()) names.emplace_back(s.name());
  }
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " and " : ", ";
    out += names[i];
  }
  return out;
}

}  // namespace
}  // namespace schemes

std::span<const Scheme> AllSchemes() { return schemes::TheTable().schemes; }

const Strategy* FindStrategy(const Scheme& scheme) {
  const schemes::Table& table = schemes::TheTable();
  for (size_t i = 0; i < table.schemes.size(); ++i) {
    if (table.schemes[i] == scheme) return table.strategies[i].get();
  }
  return nullptr;
}

std::unique_ptr<Strategy> MakeStrategy(const Scheme& scheme) {
  for (auto make : schemes::kFactories) {
    std::unique_ptr<Strategy> strategy = make();
    if (strategy->scheme() == scheme) return strategy;
  }
  return nullptr;
}

Result<Scheme> ParseScheme(std::string_view text) {
  for (const Scheme& scheme : AllSchemes()) {
    if (scheme.name() == text) return scheme;
  }
  std::vector<std::string> names;
  for (const Scheme& scheme : AllSchemes()) names.emplace_back(scheme.name());
  return Status::Invalid("unknown scheme '" + std::string(text) + "'" + DidYouMean(text, names) +
                         " (expected " + SchemeNamesText() + ")");
}

std::string SchemeNamesText() {
  const std::span<const Scheme> all = AllSchemes();
  std::string out;
  for (size_t i = 0; i < all.size(); ++i) {
    if (i > 0) out += i + 1 == all.size() ? " or " : ", ";
    out += all[i].name();
  }
  return out;
}

std::string SchemeListing() {
  size_t width = 0;
  for (const Scheme& scheme : AllSchemes()) width = std::max(width, scheme.name().size());
  std::string out;
  for (const Scheme& scheme : AllSchemes()) {
    const std::string name(scheme.name());
    out += name + std::string(width + 2 - name.size(), ' ') +
           std::string(FindStrategy(scheme)->summary()) + "\n";
  }
  return out;
}

std::vector<RankDim> RankDims(const SchemeParams& params) {
  const Strategy* strategy = FindStrategy(params.scheme);
  return strategy == nullptr ? std::vector<RankDim>{} : strategy->RankDims(params);
}

std::string DescribeParams(const SchemeParams& params) {
  const Strategy* strategy = FindStrategy(params.scheme);
  std::string out;
  auto add = [&](const std::string& part) {
    if (part.empty()) return;
    if (!out.empty()) out += ' ';
    out += part;
  };
  if (strategy != nullptr) add(strategy->DescribeDegrees(params));
  if (strategy == nullptr || strategy->UsesLayout()) add(std::string(LayoutName(params.layout)));
  if (params.cache_forward) add("cache");
  if (strategy != nullptr && strategy->UsesReduceChain() &&
      params.reduce_chain == ReduceChain::kOwnerFirst) {
    add(std::string(ReduceChainName(params.reduce_chain)));
  }
  const std::vector<RankDim> dims = RankDims(params);
  if (dims.size() > 1 && params.placement.size() == dims.size()) {
    std::string p;
    for (size_t i = 0; i < params.placement.size(); ++i) p += (i ? ">" : "") + params.placement[i];
    add("place=" + p);
  }
  return out;
}

std::string LayoutOrPlacementProblem(const SchemeParams& params, const ShardLayout& layout,
                                     const Mask& mask) {
  const Strategy* strategy = FindStrategy(params.scheme);
  if ((layout.kind == Layout::kBalanced || layout.kind == Layout::kDocZigzag) &&
      (strategy == nullptr || !strategy->OffersManyRangeLayouts())) {
    return std::string(layout.kind == Layout::kBalanced
                           ? "the balanced layout (load-balanced dispatch)"
                           : "the doc-zigzag layout (TransformerEngine's THD split)") +
           " is offered to " + schemes::ManyRangeLayoutSchemes() + " only";
  }
  if (Status st = layout.Validate(mask); !st.ok()) return st.message();
  if (Status st = ValidatePlacement(RankDims(params), params.placement); !st.ok())
    return st.message();
  return "";
}

}  // namespace meshplan::planner
