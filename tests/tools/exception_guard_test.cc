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

// The memory preflight (executor/host_memory.h) refuses these runs first; told that 2^62 bytes
// are available (--max-memory), execute goes on to allocate and the guard gets the bad_alloc.
void ExpectPreflightRefusal(const testing::CliResult& r, const std::string& path, const std::string& inputs) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err.rfind("meshplan: error: " + path + ": execute: this run needs about ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("(inputs " + inputs + " while float64 random inputs are converted;"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("even 1K tokens would not fit"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
}

TEST_F(Guard17, ExecuteWithHeadDim2To40IsOneLineNotAnAbort) {
  // 1 x 256 tokens x 4 heads x 2^40 = 2^50 elements: valid (below 2^56) but 4 PiB as floats.
  const std::string plan = Read(MakeFourRankPlan());
  const std::string path = Write("big.toml", EditedPlan(plan, "head_dim = 16", "head_dim = 1099511627776"));
  // Hq = 4, Hkv = 2: q-sized tensors 2^50 elements, kv-sized 2^49. Float64 random q, dO, o, dq,
  // k, v, dk, dv: 8 (4 x 2^50 + 4 x 2^49) = 48 x 2^50 bytes (lse's 1024 rows vanish at this
  // scale), float q, k, v, dO: 4 (2 x 2^50 + 2 x 2^49) = 12 x 2^50: 60 x 2^50 = 61440 TiB.
  ExpectPreflightRefusal(Run("execute " + path), path, "61440.00 TiB");
  const testing::CliResult r = Run("execute " + path + " --max-memory 2^62");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err, kOutOfMemory);
}

TEST_F(Guard17, ExecuteWithBatch2To40IsOneLineNotAnAbort) {
  // 2^40 x 256 x 4 x 16 = 2^54 elements.
  const std::string plan = Read(MakeFourRankPlan());
  const std::string path = Write("big.toml", EditedPlan(plan, "batch = 1", "batch = 1099511627776"));
  // q-sized 2^54, kv-sized 2^53, lse 2^50: float64 8 (4 x 2^54 + 2^50 + 4 x 2^53) = 776 x 2^50, float
  // 4 (2 x 2^54 + 2 x 2^53) = 192 x 2^50: 968 x 2^50 bytes = 991232 TiB.
  ExpectPreflightRefusal(Run("execute " + path), path, "991232.00 TiB");
  const testing::CliResult r = Run("execute " + path + " --max-memory 2^62");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err, kOutOfMemory);
}

}  // namespace
}  // namespace meshplan
