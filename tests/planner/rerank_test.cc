// RerankBySimulation with a stand-in timer: the first k plans get their timer's seconds and are
// re-sorted (fitting plans first, then by time); the rest keep their places; errors change nothing.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "planner/plan_timer.h"
#include "planner/schemes/registry.h"
#include "planner/search.h"
#include "tests/planner/test_cluster.h"

namespace meshplan::planner {
namespace {

// Times a plan by its ring degree (an arbitrary, distinct key in these tests); fails on
// `fail_ring`.
class FakeTimer : public PlanTimer {
 public:
  std::map<int64_t, double> seconds_by_ring;
  int64_t fail_ring = -1;
  int calls = 0;
  Result<double> Seconds(const PlanContext&, const SchemeParams& params) override {
    ++calls;
    if (params.ring == fail_ring)
      return Status::Invalid("cannot time ring " + std::to_string(params.ring));
    return seconds_by_ring.at(params.ring);
  }
};

Estimate RerankEstimate(int64_t ring, double time_s, bool fits) {
  Estimate e;
  e.params.scheme = Scheme("ring");
  e.params.ring = ring;
  e.valid = true;
  e.time_s = time_s;
  e.fits = fits;
  return e;
}

std::vector<int64_t> Rings(const SearchResult& r) {
  std::vector<int64_t> out;
  for (const Estimate& e : r.ranked) out.push_back(e.params.ring);
  return out;
}

class RerankTest : public ::testing::Test {
 protected:
  RerankTest() : topology_(testing::SmallCluster(4, 2)), ctx_(workload_, topology_) {}
  Workload workload_;
  Topology topology_;
  PlanContext ctx_;
};

TEST_F(RerankTest, ResortsTheFirstKAndKeepsTheRest) {
  SearchResult result;
  result.ranked = {RerankEstimate(1, 1.0, true), RerankEstimate(2, 2.0, true),
                   RerankEstimate(3, 3.0, true), RerankEstimate(4, 4.0, true)};
  FakeTimer timer;
  timer.seconds_by_ring = {{1, 9.0}, {2, 5.0}, {3, 7.0}};
  ASSERT_TRUE(RerankBySimulation(ctx_, timer, 3, &result).ok());
  EXPECT_EQ(timer.calls, 3);
  // Simulated 9, 5, 7 -> order 2 (5 s), 3 (7 s), 1 (9 s); plan 4 stays last, unsimulated.
  EXPECT_EQ(Rings(result), (std::vector<int64_t>{2, 3, 1, 4}));
  EXPECT_EQ(result.ranked[0].simulated_s, 5.0);
  EXPECT_EQ(result.ranked[1].simulated_s, 7.0);
  EXPECT_EQ(result.ranked[2].simulated_s, 9.0);
  EXPECT_EQ(result.ranked[3].simulated_s, -1);
}

TEST_F(RerankTest, FittingPlansStayAheadOfThoseThatDoNot) {
  SearchResult result;
  result.ranked = {RerankEstimate(1, 1.0, true), RerankEstimate(2, 2.0, false)};
  FakeTimer timer;
  timer.seconds_by_ring = {{1, 9.0}, {2, 1.0}};  // the non-fitting plan simulates faster
  ASSERT_TRUE(RerankBySimulation(ctx_, timer, 5, &result).ok());  // k beyond the list: all of it
  EXPECT_EQ(Rings(result), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(timer.calls, 2);
}

TEST_F(RerankTest, TimerErrorNamesThePlanAndChangesNothing) {
  SearchResult result;
  result.ranked = {RerankEstimate(1, 1.0, true), RerankEstimate(2, 2.0, true),
                   RerankEstimate(3, 3.0, true)};
  FakeTimer timer;
  timer.seconds_by_ring = {{1, 9.0}, {3, 1.0}};
  timer.fail_ring = 2;
  const Status st = RerankBySimulation(ctx_, timer, 3, &result);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("plan #2"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("cannot time ring 2"), std::string::npos) << st.message();
  EXPECT_EQ(Rings(result), (std::vector<int64_t>{1, 2, 3}));
  for (const Estimate& e : result.ranked) EXPECT_EQ(e.simulated_s, -1);
}

TEST_F(RerankTest, ZeroKDoesNothing) {
  SearchResult result;
  result.ranked = {RerankEstimate(1, 1.0, true)};
  FakeTimer timer;
  ASSERT_TRUE(RerankBySimulation(ctx_, timer, 0, &result).ok());
  EXPECT_EQ(timer.calls, 0);
  EXPECT_EQ(result.ranked[0].simulated_s, -1);
}

}  // namespace
}  // namespace meshplan::planner
