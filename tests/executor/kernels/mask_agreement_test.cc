// The executor's users of the mask rule against the hand-written grids of every mask kind
// (tests/core/sequence/mask_grids.h): the CPU kernels' MaskRule, the float64 reference's
// visibility, and a CPU forward block whose output identifies each row's visible keys.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "executor/kernels/block_kernels.h"
#include "executor/kernels/reference.h"
#include "tests/core/sequence/mask_grids.h"

namespace meshplan::exec {
namespace {

using mask_grids::HandWrittenGrids;
using mask_grids::kGridTokens;
using mask_grids::MaskGrid;

TEST(MaskAgreement, KernelRuleAndReferenceMatchTheHandWrittenGrids) {
  for (const MaskGrid& g : HandWrittenGrids()) {
    const MaskRule rule(g.mask);
    const ReferenceVisibility reference(g.mask, kGridTokens);
    for (int64_t q = 0; q < kGridTokens; ++q) {
      for (int64_t k = 0; k < kGridTokens; ++k) {
        EXPECT_EQ(rule.Visible(q, k), g.Sees(q, k)) << g.name << " q " << q << " k " << k;
        EXPECT_EQ(reference(q, k), g.Sees(q, k)) << g.name << " q " << q << " k " << k;
      }
    }
  }
}

// With q = k = 0 every visible score is 0, so O of a row is the mean of v over the keys it sees
// and LSE the log of their number; v = 2^position makes the mean name the set. The query rows
// come in descending positions, so the block's row order differs from the positions.
TEST(MaskAgreement, CpuForwardBlockSeesExactlyTheGridsPairs) {
  std::vector<int64_t> q_positions, k_positions;
  for (int64_t i = 0; i < kGridTokens; ++i) {
    q_positions.push_back(kGridTokens - 1 - i);
    k_positions.push_back(i);
  }
  const std::vector<float> zeros(static_cast<size_t>(kGridTokens), 0.0f);
  std::vector<float> v;
  for (int64_t k : k_positions) v.push_back(std::ldexp(1.0f, static_cast<int>(k)));
  for (const MaskGrid& g : HandWrittenGrids()) {
    std::vector<float> o(static_cast<size_t>(kGridTokens), -1.0f),
        lse(static_cast<size_t>(kGridTokens), -1.0f);
    BlockForward({zeros.data(), kGridTokens, 1, q_positions.data()},
                 {zeros.data(), kGridTokens, 1, k_positions.data()},
                 {v.data(), kGridTokens, 1, k_positions.data()}, 1, 1.0f, MaskRule(g.mask),
                 {o.data(), kGridTokens, 1}, lse.data());
    for (int64_t row = 0; row < kGridTokens; ++row) {
      const int64_t q = q_positions[static_cast<size_t>(row)];
      double sum = 0;
      int64_t seen = 0;
      for (int64_t k = 0; k < kGridTokens; ++k) {
        if (!g.Sees(q, k)) continue;
        sum += std::ldexp(1.0, static_cast<int>(k));
        ++seen;
      }
      ASSERT_GT(seen, 0) << g.name;  // every grid row sees at least its own token
      EXPECT_NEAR(o[static_cast<size_t>(row)], sum / static_cast<double>(seen), 1e-5)
          << g.name << " query " << q;
      EXPECT_NEAR(lse[static_cast<size_t>(row)], std::log(static_cast<double>(seen)), 1e-6)
          << g.name << " query " << q;
    }
  }
}

}  // namespace
}  // namespace meshplan::exec
