// Issue 17's cases for the CLI's last guard (tools/exception_guard.cc): an allocation that fails
// deep inside a command is one error line and exit 2, not an abort.
#include <gtest/gtest.h>

#include <string>

#include "tests/tools/cli_fixture.h"

namespace meshplan {
namespace {

using Guard17 = testing::CliFixture;

constexpr char kOutOfMemory[] =
    "meshplan: error: out of memory (std::bad_alloc): the workload or plan needs more memory than "
    "this machine can "
    "give\n";

// `plan_text` with the line `key_line` replaced by `replacement`.
std::string EditedPlan(const std::string& plan_text, const std::string& key_line,
                       const std::string& replacement) {
  std::string text = plan_text;
  const size_t at = text.find(key_line);
  EXPECT_NE(at, std::string::npos) << key_line;
  if (at != std::string::npos) text.replace(at, key_line.size(), replacement);
  return text;
}

// The memory preflight (executor/host_memory.h) refuses these runs first; told that 2^62 bytes
// are available (--max-memory), execute goes on to allocate and the guard gets the bad_alloc.
// `check` is the --check phase's need as printed.
void ExpectPreflightRefusal(const testing::CliResult& r, const std::string& path,
                            const std::string& check) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err.rfind("meshplan: error: " + path + ": execute: this run needs about ", 0), 0u)
      << r.err;
  EXPECT_NE(r.err.find("; --check " + check + ") but "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("even 1K tokens would not fit"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
}

TEST_F(Guard17, ExecuteWithHeadDim2To40IsOneLineNotAnAbort) {
  // 1 x 256 tokens x 4 heads x 2^40 = 2^50 elements: valid (below 2^56) but 4 PiB as floats.
  const std::string plan = Read(MakeFourRankPlan());
  const std::string path =
      Write("big.toml", EditedPlan(plan, "head_dim = 16", "head_dim = 1099511627776"));
  // Hq = 4, Hkv = 2, fwd+bwd: q-sized tensors 2^50 elements, kv-sized 2^49 (lse's 1024 rows vanish
  // at this scale). The check holds float q, k, v, dO: 4 (2 x 2^50 + 2 x 2^49) = 12 x 2^50; float
  // o, dq, dk, dv: 4 (2 x 2^50 + 2 x 2^49) = 12 x 2^50; the float64 reference's q, k, v, o, dO,
  // dq, dk, dv: 8 (4 x 2^50 + 4 x 2^49) = 48 x 2^50: 72 x 2^50 bytes = 73728 TiB.
  ExpectPreflightRefusal(Run("execute " + path + " --check"), path, "73728.00 TiB");
  // Told the memory is there, the run is refused for the executor's 32-bit head indexing.
  const testing::CliResult r = Run("execute " + path + " --max-memory 2^62 -q");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err, "meshplan: error: " + path +
                       ": workload.head_dim = 1099511627776: the executor handles at most "
                       "2147483647 (2^31 - 1)\n");
}

TEST_F(Guard17, ExecuteWithBatch2To40IsOneLineNotAnAbort) {
  // 2^40 x 256 x 4 x 16 = 2^54 elements.
  const std::string plan = Read(MakeFourRankPlan());
  const std::string path =
      Write("big.toml", EditedPlan(plan, "batch = 1", "batch = 1099511627776"));
  // q-sized 2^54, kv-sized 2^53, lse 2^50. The check holds float q, k, v, dO: 4 (2 x 2^54 + 2 x
  // 2^53) = 192 x 2^50; float o, lse, dq, dk, dv: 4 (2 x 2^54 + 2^50 + 2 x 2^53) = 196 x 2^50; the
  // float64 reference: 8 (4 x 2^54 + 4 x 2^53 + 2^50) = 776 x 2^50: 1164 x 2^50 bytes = 1191936
  // TiB.
  ExpectPreflightRefusal(Run("execute " + path + " --check"), path, "1191936.00 TiB");
  const testing::CliResult r = Run("execute " + path + " --max-memory 2^62 -q");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err, kOutOfMemory);
}

// Issue 49: under an address-space limit a worker thread's stack cannot be reserved
// (std::system_error, EAGAIN): one line saying out of memory, exit 2, not "unexpected failure".
// 120 MB lets the program load and plan but not start its ranks' threads on the development
// machine; where the limit stops the program from loading at all there is nothing to check.
TEST_F(Guard17, AThreadThatCannotStartUnderUlimitIsOutOfMemory) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "a sanitizer reserves more address space than the limit this test sets";
#endif
  const testing::CliResult planned =
      Run("plan -t dgx-h100-4gpu --seq 4K --heads 4 --kv-heads 4 --dtype fp32 --schemes ring -q "
          "--out " +
          (dir_ / "p.toml").string());
  ASSERT_EQ(planned.exit_code, 0) << planned.err;
  const testing::CliResult r =
      Run("execute " + (dir_ / "p.toml").string() + " --check -q", "ulimit -v 120000;");
  if (r.err.find("error while loading shared libraries") != std::string::npos || r.exit_code == 0) {
    GTEST_SKIP() << "the limit does not stop the threads here: " << r.err;
  }
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err.rfind("meshplan: error: out of memory", 0), 0u) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
}

}  // namespace
}  // namespace meshplan
