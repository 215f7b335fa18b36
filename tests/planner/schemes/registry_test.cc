// The scheme registry (planner/schemes/registry.cc): every scheme once under the name plan files
// use, each name finding its own strategy, and the names, listings and descriptions that every
// help text, error and report takes from it.
#include "planner/schemes/registry.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <set>
#include <string>

#include "planner/context.h"
#include "tests/planner/test_cluster.h"

namespace meshplan::planner {
namespace {

// The names plan files have always used (docs/plan-format.md): a plan written by an earlier
// meshplan must still parse, so the registry may add names but never rename these.
constexpr std::string_view kPublishedNames[] = {"ring", "allgather-kv", "ulysses",
                                                "usp",  "loongtrain",   "attention2d",
                                                "mesh", "mesh-ulysses", "attention2d-o"};

TEST(SchemeRegistry, ListsEverySchemeOnceWithItsOwnStrategy) {
  std::set<std::string> seen;
  for (const Scheme& s : AllSchemes()) {
    const std::string name(s.name());
    EXPECT_TRUE(seen.insert(name).second) << name << " is registered twice";
    EXPECT_FALSE(name.empty());
    EXPECT_TRUE(std::all_of(
        name.begin(), name.end(),
        [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; }))
        << name << ": a flag and file name uses lower case, digits and '-' only";
    const std::unique_ptr<Strategy> made = MakeStrategy(s);
    ASSERT_NE(made, nullptr) << name;
    EXPECT_EQ(made->scheme(), s) << name;
    const Strategy* found = FindStrategy(s);
    ASSERT_NE(found, nullptr) << name;
    EXPECT_EQ(found->scheme(), s) << name;
    EXPECT_FALSE(found->summary().empty()) << name;
  }
  for (std::string_view name : kPublishedNames)
    EXPECT_EQ(seen.count(std::string(name)), 1u) << name;
  EXPECT_EQ(FindStrategy(Scheme("no-such-scheme")), nullptr);
  EXPECT_EQ(MakeStrategy(Scheme("no-such-scheme")), nullptr);
  EXPECT_EQ(FindStrategy(Scheme()), nullptr);
}

TEST(SchemeRegistry, ParsesEveryNameAndListsThemWhenOneIsUnknown) {
  for (const Scheme& s : AllSchemes()) {
    auto parsed = ParseScheme(s.name());
    ASSERT_TRUE(parsed.ok()) << s.name();
    EXPECT_EQ(*parsed, s);
  }
  auto bad = ParseScheme("rings");
  ASSERT_FALSE(bad.ok());
  for (const Scheme& s : AllSchemes()) {
    EXPECT_NE(bad.status().message().find(std::string(s.name())), std::string::npos)
        << "the error should list " << s.name() << ": " << bad.status().message();
  }
  EXPECT_FALSE(ParseScheme("").ok());
  EXPECT_FALSE(ParseScheme("Ring").ok()) << "names are case-sensitive, as plan files write them";
}

TEST(SchemeRegistry, NamesTextJoinsWithCommasAndOr) {
  const std::span<const Scheme> all = AllSchemes();
  ASSERT_GE(all.size(), 2u);
  std::string want;
  for (size_t i = 0; i < all.size(); ++i) {
    if (i > 0) want += i + 1 == all.size() ? " or " : ", ";
    want += all[i].name();
  }
  EXPECT_EQ(SchemeNamesText(), want);
  // One listing line per scheme, each starting with its name.
  const std::string listing = SchemeListing();
  EXPECT_EQ(static_cast<size_t>(std::count(listing.begin(), listing.end(), '\n')), all.size());
  for (const Scheme& s : all) {
    EXPECT_NE(("\n" + listing).find("\n" + std::string(s.name()) + " "), std::string::npos)
        << s.name();
  }
}

TEST(SchemeRegistry, EveryRankGridNamesItsDimensionsOnce) {
  SchemeParams p;
  p.ulysses = 2;
  p.ring = 4;
  p.window = 2;
  p.tile_a = 2;
  p.tile_b = 4;
  for (const Scheme& s : AllSchemes()) {
    p.scheme = s;
    const std::vector<RankDim> dims = RankDims(p);
    ASSERT_FALSE(dims.empty()) << s.name();
    std::set<std::string> names;
    for (const RankDim& d : dims) {
      EXPECT_TRUE(names.insert(d.name).second) << s.name() << " names " << d.name << " twice";
      EXPECT_GE(d.size, 1) << s.name() << " " << d.name;
    }
  }
  p.scheme = Scheme("no-such-scheme");
  EXPECT_TRUE(RankDims(p).empty());
}

// The short form docs/plan-output.md documents: degrees, layout (not for ulysses, which has
// none), "cache", "owner-first" (the tile schemes' reduce chain), and the placement of a grid
// with more than one dimension.
TEST(SchemeRegistry, DescribesParametersInTheDocumentedShortForm) {
  SchemeParams p;
  p.layout = Layout::kZigzag;
  p.scheme = Scheme("ring");
  p.ring = 8;
  p.placement = {"cp"};
  EXPECT_EQ(DescribeParams(p), "zigzag");
  p.scheme = Scheme("ulysses");
  p.ulysses = 8;
  p.cache_forward = true;
  p.placement = {"ulysses"};
  EXPECT_EQ(DescribeParams(p), "cache");
  p.scheme = Scheme("usp");
  p.ulysses = 2;
  p.ring = 4;
  p.cache_forward = false;
  p.placement = {"ring", "ulysses"};
  EXPECT_EQ(DescribeParams(p), "U=2 R=4 zigzag place=ring>ulysses");
  p.scheme = Scheme("loongtrain");
  p.ring = 8;
  p.window = 2;
  p.placement = {"head", "inner", "outer"};
  EXPECT_EQ(DescribeParams(p), "hp=2 cp=8 w=2 zigzag place=head>inner>outer");
  p.scheme = Scheme("mesh");
  p.tile_a = 2;
  p.tile_b = 4;
  p.layout = Layout::kStriped;
  p.cache_forward = true;
  p.reduce_chain = ReduceChain::kOwnerFirst;
  p.placement = {"kv", "q"};
  EXPECT_EQ(DescribeParams(p), "a=2 b=4 striped cache owner-first place=kv>q");
  // ATTENTION2D has no reduce chain: the field is not shown even when set.
  p.scheme = Scheme("attention2d");
  EXPECT_EQ(DescribeParams(p), "a=2 b=4 striped cache place=kv>q");
  p.scheme = Scheme("mesh-ulysses");
  p.placement = {"ulysses", "q", "kv"};
  EXPECT_EQ(DescribeParams(p), "U=2 a=2 b=4 striped cache owner-first place=ulysses>q>kv");
}

// The balanced layout (load-balanced dispatch) is built by the 1-D ring schemes only; a plan of
// another scheme that asks for it is refused with the list of those that offer it.
TEST(SchemeRegistry, SchemesThatDoNotMakeTheBalancedLayoutNameThoseThatDo) {
  Workload w = testing::SmallWorkload();
  w.mask = Mask::Documents({1024, 512, 2048, 512}, false);
  const Topology cluster = testing::SmallCluster(4, 1);
  const PlanContext ctx(w, cluster);
  SchemeParams mesh;
  mesh.scheme = Scheme("mesh");
  mesh.layout = Layout::kBalanced;
  mesh.tile_a = 2;
  mesh.tile_b = 2;
  mesh.placement = {"q", "kv"};
  const Estimate e = FindStrategy(mesh.scheme)->Evaluate(ctx, mesh);
  EXPECT_FALSE(e.valid);
  EXPECT_NE(e.reason.find("offered to ring, allgather-kv, usp and loongtrain only"),
            std::string::npos)
      << e.reason;
  // Ring makes it: the same workload's balanced ring plan is valid.
  SchemeParams ring;
  ring.scheme = Scheme("ring");
  ring.layout = Layout::kBalanced;
  ring.ring = 4;
  ring.placement = {"cp"};
  const Estimate r = FindStrategy(ring.scheme)->Evaluate(ctx, ring);
  EXPECT_TRUE(r.valid) << r.reason;
}

}  // namespace
}  // namespace meshplan::planner
