// Grouping of equivalent plans with hand-made estimates: the 0.5% time tolerance (inclusive at its
// edge, 0.6% apart is not a tie), byte counts that must agree in total and per level, fits and
// simulated status kept apart, and groups anchored on their representative (no chaining).
#include "planner/equivalence.h"

#include <gtest/gtest.h>

#include <vector>

#include "planner/schemes/registry.h"

namespace meshplan::planner {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

// A plan told apart by its ring degree, sending `nvlink_bytes` + `ib_bytes` per GPU.
Estimate MakeEstimate(int64_t ring, double time_s, double nvlink_bytes = 64 * kMiB,
                      double ib_bytes = 256 * kMiB) {
  Estimate e;
  e.params.scheme = Scheme("ring");
  e.params.ring = ring;
  e.valid = true;
  e.fits = true;
  e.time_s = time_s;
  e.level_bytes = {nvlink_bytes, ib_bytes};
  e.bytes_per_rank = nvlink_bytes + ib_bytes;
  return e;
}

// Groups as lists of indices, for readable expectations.
std::vector<std::vector<size_t>> Members(const std::vector<PlanGroup>& groups) {
  std::vector<std::vector<size_t>> out;
  for (const PlanGroup& g : groups) out.push_back(g.members);
  return out;
}

TEST(Equivalence, TheToleranceIsHalfAPercent) { EXPECT_DOUBLE_EQ(kEquivalentTimeTolerance, 0.005); }

TEST(Equivalence, EqualCostPlansCollapseIntoOneGroup) {
  // Four plans with the same time and bytes (as LoongTrain with windows 2, 4, 8, 16), then a
  // slower one: two groups, the first of four plans.
  const std::vector<Estimate> ranked = {MakeEstimate(2, 0.02859), MakeEstimate(4, 0.02859),
                                        MakeEstimate(8, 0.02859), MakeEstimate(16, 0.02859),
                                        MakeEstimate(32, 0.05)};
  const std::vector<PlanGroup> groups = GroupEquivalentPlans(ranked);
  EXPECT_EQ(Members(groups), (std::vector<std::vector<size_t>>{{0, 1, 2, 3}, {4}}));
  EXPECT_EQ(groups[0].representative(), 0u);
  EXPECT_EQ(groups[0].equivalents(), 3u);
  EXPECT_EQ(groups[1].equivalents(), 0u);
}

TEST(Equivalence, TheToleranceEdgeIsInsideAndSixTenthsOfAPercentIsOutside) {
  const Estimate base = MakeEstimate(1, 1.0);
  // 1.005 s is 0.5% above 1 s: the edge, inclusive.
  EXPECT_TRUE(IsEquivalent(base, MakeEstimate(2, 1.005)));
  // Just past the edge (0.50001%) and 0.6% above: not equivalent.
  EXPECT_FALSE(IsEquivalent(base, MakeEstimate(2, 1.0050001)));
  EXPECT_FALSE(IsEquivalent(base, MakeEstimate(2, 1.006)));
  // The tolerance is relative to the representative's time: 200 s and 201 s are 0.5% apart.
  EXPECT_TRUE(IsEquivalent(MakeEstimate(1, 200.0), MakeEstimate(2, 201.0)));
  EXPECT_FALSE(IsEquivalent(MakeEstimate(1, 200.0), MakeEstimate(2, 201.2)));  // 0.6%
  // A stated tolerance replaces the default: 1% lets 0.6% through.
  EXPECT_TRUE(IsEquivalent(base, MakeEstimate(2, 1.006), 0.01));
  const std::vector<Estimate> ranked = {base, MakeEstimate(2, 1.005), MakeEstimate(3, 1.006)};
  EXPECT_EQ(Members(GroupEquivalentPlans(ranked)), (std::vector<std::vector<size_t>>{{0, 1}, {2}}));
}

TEST(Equivalence, DifferentBytesAreNotGrouped) {
  const Estimate base = MakeEstimate(1, 1.0);
  // Same time, 1 KiB more over ib (and so in total).
  EXPECT_FALSE(IsEquivalent(base, MakeEstimate(2, 1.0, 64 * kMiB, 256 * kMiB + 1024)));
  // Same time and the same total (320 MiB), split differently between the levels.
  EXPECT_FALSE(IsEquivalent(base, MakeEstimate(2, 1.0, 128 * kMiB, 192 * kMiB)));
  // A last-bit difference from rounding is the same byte count: 320 MiB * (1 + 2^-52).
  Estimate rounded = MakeEstimate(2, 1.0);
  rounded.bytes_per_rank *= 1.0 + 0x1p-52;
  EXPECT_TRUE(IsEquivalent(base, rounded));
}

TEST(Equivalence, FittingAndSimulatedStatusMustAgree) {
  const Estimate base = MakeEstimate(1, 1.0);
  Estimate too_big = MakeEstimate(2, 1.0);
  too_big.fits = false;
  EXPECT_FALSE(IsEquivalent(base, too_big));
  // Simulated plans compare their simulated times: equal estimates, 1 s vs 1.1 s replayed.
  Estimate a = MakeEstimate(1, 1.0), b = MakeEstimate(2, 1.0);
  a.simulated_s = 1.0;
  b.simulated_s = 1.1;
  EXPECT_FALSE(IsEquivalent(a, b));
  b.simulated_s = 1.002;
  EXPECT_TRUE(IsEquivalent(a, b));
  EXPECT_DOUBLE_EQ(RankingSeconds(b), 1.002);
  EXPECT_DOUBLE_EQ(RankingSeconds(base), 1.0);
  // A simulated time is never compared with an estimate, even when they are equal.
  EXPECT_FALSE(IsEquivalent(a, base));
}

TEST(Equivalence, GroupsAreAnchoredOnTheirRepresentativeNotChained) {
  // 1.000 ~ 1.004 (0.4%) and 1.004 ~ 1.008 (0.398%), but 1.000 and 1.008 are 0.8% apart: the
  // third plan starts its own group instead of joining through the second.
  const std::vector<Estimate> ranked = {MakeEstimate(1, 1.000), MakeEstimate(2, 1.004),
                                        MakeEstimate(3, 1.008)};
  EXPECT_TRUE(IsEquivalent(ranked[1], ranked[2]));
  EXPECT_EQ(Members(GroupEquivalentPlans(ranked)), (std::vector<std::vector<size_t>>{{0, 1}, {2}}));
}

TEST(Equivalence, APlanJoinsTheFirstEarlierGroupItMatchesEvenAcrossOthers) {
  // Plan 2 has other bytes and starts a group between plans 0 and 2, which are equivalent: plan 2
  // joins plan 0's group, and the groups stay in the order of their representatives.
  const std::vector<Estimate> ranked = {MakeEstimate(1, 1.000), MakeEstimate(2, 1.001, 32 * kMiB),
                                        MakeEstimate(3, 1.002), MakeEstimate(4, 1.003, 32 * kMiB)};
  EXPECT_EQ(Members(GroupEquivalentPlans(ranked)),
            (std::vector<std::vector<size_t>>{{0, 2}, {1, 3}}));
}

TEST(Equivalence, AnEmptyRankingHasNoGroups) { EXPECT_TRUE(GroupEquivalentPlans({}).empty()); }

TEST(WithinModelError, PlansWithin5PercentOfTheBestThatFitsCannotBeToldApart) {
  EXPECT_DOUBLE_EQ(kModelErrorFraction, 0.05);
  // The first plan does not fit; the best that fits takes 100 ms, so up to 105 ms is within the
  // model's error: 100, 104.9 and 105 ms, not 105.1 ms; a plan that does not fit never is.
  std::vector<Estimate> ranked = {MakeEstimate(2, 0.090),   MakeEstimate(4, 0.100),
                                  MakeEstimate(8, 0.1049),  MakeEstimate(16, 0.105),
                                  MakeEstimate(32, 0.1051), MakeEstimate(64, 0.103)};
  ranked[0].fits = false;
  ranked[5].fits = false;
  EXPECT_EQ(WithinModelError(ranked), (std::vector<size_t>{1, 2, 3}));
  // A simulated time ranks the plan instead of its estimate.
  ranked[4].simulated_s = 0.101;
  EXPECT_EQ(WithinModelError(ranked), (std::vector<size_t>{1, 2, 3, 4}));
  for (Estimate& e : ranked) e.fits = false;
  EXPECT_TRUE(WithinModelError(ranked).empty());
}

}  // namespace
}  // namespace meshplan::planner
