// Issue 17's cases for `meshplan fit` (tools/fit_command.cc, capacity/fit.cc): every search is
// bounded before it starts.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "tests/tools/cli_fixture.h"

namespace meshplan {
namespace {

using Fit17 = testing::CliFixture;

TEST_F(Fit17, MaxGpusOf2To62WithATinyBudgetIsRefusedAtOnce) {
  // Issue 17: this did not finish in 60 s.
  const auto start = std::chrono::steady_clock::now();
  ExpectRefused(
      "fit --seq 64K --max-gpus 2^62 --budget-s 1e-9",
      "fit: --max-gpus 4611686018427387904 is more than the 10000000 GPUs a topology may have");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0);
}

TEST_F(Fit17, BudgetMustBeAFinitePositiveNumber) {
  for (const char* value : {"inf", "nan", "0", "-1"}) {
    ExpectRefused(std::string("fit --seq 64K --budget-s ") + value,
                  "--budget-s: must be positive and finite (seconds)");
  }
}

}  // namespace
}  // namespace meshplan
