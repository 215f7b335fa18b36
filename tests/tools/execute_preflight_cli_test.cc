// `meshplan execute`'s host memory preflight end to end: the README's 256K-token, 32-rank plan is
// refused before anything is allocated when the memory it needs is not there.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "tests/tools/cli_fixture.h"

namespace meshplan {
namespace {

namespace fs = std::filesystem;

class ExecutePreflight : public testing::CliFixture {
 protected:
  // Exit code; stderr in err_.
  int Run(const std::string& args) {
    const testing::CliResult r = CliFixture::Run(args);
    err_ = r.err;
    return r.exit_code;
  }
  std::string err_;
};

TEST_F(ExecutePreflight, RefusesTheReadmesLargePlanWithTheNumbers) {
  const std::string plan = (dir_ / "plan.toml").string();
  ASSERT_EQ(Run("plan --seq 256K -t " + std::string(MESHPLAN_SOURCE_DIR) +
                "/topologies/dgx-h100-4node.toml -q --out " + plan),
            0)
      << err_;
  // The default workload: S = 256K = 262144, Hq = 64, Hkv = 8, d = 128, fwd+bwd. The check holds
  // the float inputs q, k, v, dO: 4 x 262144 x (2 x 8192 + 2 x 1024) = 18 GiB; the float outputs
  // o, lse, dq, dk, dv: 4 x 262144 x (2 x 8192 + 64 + 2 x 1024) = 18.0625 GiB; the float64
  // reference's q, k, v, o, lse, dO, dq, dk, dv: 8 x 262144 x (4 x 8192 + 64 + 4 x 1024) =
  // 72.125 GiB: 108.1875 GiB, printed "108.19 GiB".
  EXPECT_EQ(
      Run("execute " + plan + " --check --max-memory 16G --outputs " + (dir_ / "out").string()), 2);
  EXPECT_EQ(err_.rfind("meshplan: error: " + plan + ": execute: this run needs about ", 0), 0u)
      << err_;
  EXPECT_NE(err_.find("; --check 108.19 GiB) but "), std::string::npos) << err_;
  EXPECT_NE(err_.find("but 16.00 GiB is available (--max-memory 16G)"), std::string::npos) << err_;
  EXPECT_NE(err_.find("tokens or fewer would fit"), std::string::npos) << err_;
  EXPECT_EQ(std::count(err_.begin(), err_.end(), '\n'), 1) << err_;
  EXPECT_FALSE(fs::exists(dir_ / "out"));
}

TEST_F(ExecutePreflight, ASmallPlanRunsAndABadLimitIsRefused) {
  const std::string plan = (dir_ / "small.toml").string();
  ASSERT_EQ(Run("plan -t " + std::string(MESHPLAN_SOURCE_DIR) +
                "/topologies/dgx-h100-1node.toml --seq 1K --heads 8 --kv-heads 2 --head-dim 32 "
                "--schemes ring -q "
                "--out " +
                plan),
            0)
      << err_;
  // 1K tokens, 8 heads of 32 on 8 ranks: a few MiB of working memory; 1 GiB is plenty, 1 MiB is
  // not.
  EXPECT_EQ(Run("execute " + plan + " --max-memory 1G -q"), 0) << err_;
  EXPECT_EQ(Run("execute " + plan + " --max-memory 1M -q"), 2);
  EXPECT_NE(err_.find("but 1.00 MiB is available (--max-memory 1M)"), std::string::npos) << err_;
  EXPECT_EQ(Run("execute " + plan + " --max-memory lots -q"), 2);
  EXPECT_EQ(err_.rfind("meshplan: error: --max-memory: ", 0), 0u) << err_;
}

TEST_F(ExecutePreflight, ALongRunSaysHowLongFirst) {
  // 64K tokens, causal, 8 heads of 64, fwd+bwd: 4 x (65536 x 65537 / 2) x 8 x 64 x 3.5 = 1.5e13
  // FLOPs, minutes on any CPU; the injected failure ends the run at its first op, after the note.
  // Ulysses: every rank's first op is an all-to-all with rank 0, so no rank computes before the
  // failure ends the job.
  const std::string plan = (dir_ / "long.toml").string();
  ASSERT_EQ(Run("plan -t dgx-h100-4gpu --seq 64K --heads 8 --kv-heads 8 --head-dim 64 --schemes "
                "ulysses -q --out " +
                plan),
            0)
      << err_;
  EXPECT_EQ(Run("execute " + plan + " --inject-fail 0:0"), 1) << err_;
  EXPECT_EQ(err_.rfind("meshplan: note: 1 run of 1.54e+13 FLOPs will take at least ", 0), 0u)
      << err_;
  EXPECT_NE(err_.find("GFLOP/s per core measured just now, on "), std::string::npos) << err_;
  // --quiet keeps it off stderr.
  EXPECT_EQ(Run("execute " + plan + " --inject-fail 0:0 -q"), 1);
  EXPECT_EQ(err_.find("note:"), std::string::npos) << err_;
}

}  // namespace
}  // namespace meshplan
