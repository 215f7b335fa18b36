// Near-tie detection on hand-made times: an exact tie, a 0.4% difference (a tie at the 0.5%
// tolerance) and a 0.6% difference (not a tie). Each expected index is read off the inputs here.
#include "report/capacity/near_ties.h"

#include <gtest/gtest.h>

#include <vector>

namespace meshplan::report {
namespace {

TEST(NearTies, ToleranceIsHalfAPercent) { EXPECT_DOUBLE_EQ(kTieRelativeTolerance, 0.005); }

TEST(NearTies, ExactTie) {
  EXPECT_TRUE(TiesWithBest(51.4175, 51.4175));
  // Three equal times: the first is the best, the other two tie with it, in index order.
  const NearTies t = FindNearTies({2.0, 2.0, 3.0, 2.0});
  EXPECT_EQ(t.best, 0u);
  EXPECT_EQ(t.tied, (std::vector<size_t>{1, 3}));
}

TEST(NearTies, FourTenthsOfAPercentIsATie) {
  // 1.004 s is 0.4% above 1.000 s, inside 1.000 x 1.005 = 1.005 s.
  EXPECT_TRUE(TiesWithBest(1.000, 1.004));
  // 200 ms best (index 2); 200.8 ms is +0.4% (index 0); 250 ms is not a tie.
  const NearTies t = FindNearTies({0.2008, 0.250, 0.200});
  EXPECT_EQ(t.best, 2u);
  EXPECT_EQ(t.tied, (std::vector<size_t>{0}));
}

TEST(NearTies, SixTenthsOfAPercentIsNotATie) {
  // 1.006 s is 0.6% above 1.000 s, beyond 1.005 s.
  EXPECT_FALSE(TiesWithBest(1.000, 1.006));
  const NearTies t = FindNearTies({1.006, 1.000});
  EXPECT_EQ(t.best, 1u);
  EXPECT_TRUE(t.tied.empty());
}

TEST(NearTies, TiedAreOrderedByTimeAndMeasuredFromTheBestNotChained) {
  // Best 100; 100.45 (+0.45%) and 100.3 (+0.3%) tie, listed fastest first; 100.9 is +0.9% from
  // the best though only +0.45% from 100.45: ties are measured from the best, so it is out.
  const NearTies t = FindNearTies({100.45, 100.0, 100.9, 100.3});
  EXPECT_EQ(t.best, 1u);
  EXPECT_EQ(t.tied, (std::vector<size_t>{3, 0}));
  // A tolerance of zero keeps only exact ties.
  EXPECT_TRUE(FindNearTies({5.0, 5.0001}, 0.0).tied.empty());
  EXPECT_EQ(FindNearTies({5.0, 5.0}, 0.0).tied, (std::vector<size_t>{1}));
  // A single time has no ties.
  EXPECT_TRUE(FindNearTies({3.0}).tied.empty());
}

}  // namespace
}  // namespace meshplan::report
