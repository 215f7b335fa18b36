// Issue 17's cases for the CLI's last guard (tools/exception_guard.cc): an allocation that fails
// deep inside a command is one error line and exit 2, not an abort.
#include <gtest/gtest.h>

#include <string>

#include "tests/tools/cli_fixture.h"

namespace meshplan {
namespace {

using Guard17 = testing::CliFixture;

constexpr char kOutOfMemory[] =
    "meshplan: error: out of memory (std::bad_alloc): the workload or plan needs more memory than this machine can "
    "give\n";

// `plan_text` with the line `key_line` replaced by `replacement`.
std::string EditedPlan(const std::string& plan_text, const std::string& key_line, const std::string& replacement) {
  std::string text = plan_text;
  const size_t at = text.find(key_line);
  EXPECT_NE(at, std::string::npos) << key_line;
  if (at != std::string::npos) text.replace(at, key_line.size(), replacement);
  return text;
}

TEST_F(Guard17, ExecuteWithHeadDim2To40IsOneLineNotAnAbort) {
  // 1 x 256 tokens x 4 heads x 2^40 = 2^50 elements: valid (below 2^56) but 4 PiB as floats.
  const std::string plan = Read(MakeFourRankPlan());
  const std::string path = Write("big.toml", EditedPlan(plan, "head_dim = 16", "head_dim = 1099511627776"));
  const testing::CliResult r = Run("execute " + path);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err, kOutOfMemory);
}

TEST_F(Guard17, ExecuteWithBatch2To40IsOneLineNotAnAbort) {
  // 2^40 x 256 x 4 x 16 = 2^54 elements.
  const std::string plan = Read(MakeFourRankPlan());
  const std::string path = Write("big.toml", EditedPlan(plan, "batch = 1", "batch = 1099511627776"));
  const testing::CliResult r = Run("execute " + path);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err, kOutOfMemory);
}

}  // namespace
}  // namespace meshplan
