// `meshplan bench` end to end on a tiny grid: CSV rows, charts, and flags refused with one line.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "tests/tools/cli_fixture.h"

namespace meshplan {
namespace {

using BenchCli = testing::CliFixture;

constexpr char kTiny[] =
    "bench -t dgx-h100-4gpu --seq 256 --mask causal --schemes ring,ulysses --heads 2 "
    "--kv-heads 2 --head-dim 16 --repeat 1 ";

TEST_F(BenchCli, WritesOneRowPerPointAndTheCharts) {
  const std::string charts = (dir_ / "charts").string();
  const testing::CliResult r = Run(std::string(kTiny) + "--format csv --charts " + charts);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Header and the two schemes' rows; progress on stderr, one line per point.
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 3) << r.out;
  EXPECT_NE(r.out.find("\ncausal,256,ring,4,ran,"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\ncausal,256,ulysses,4,no plan,"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("meshplan: bench: 1/2 causal 256 ring: ran in "), std::string::npos)
      << r.err;
  EXPECT_TRUE(std::filesystem::exists(dir_ / "charts" / "tflops-causal.svg"));
  EXPECT_TRUE(std::filesystem::exists(dir_ / "charts" / "memory-causal.svg"));
}

TEST_F(BenchCli, BadFlagsAreOneLineAndExit2) {
  struct Bad {
    std::string flags, starts;
  };
  for (const Bad& bad :
       {Bad{"--format xml", "meshplan: error: --format: "},
        Bad{"--transport mpi", "meshplan: error: --transport: mpi is not available to bench"},
        Bad{"--mask sideways", "meshplan: error: --mask: "},
        Bad{"--repeat 0", "meshplan: error: --repeat"},
        Bad{"--schemes spiral", "meshplan: error: --schemes: "},
        Bad{"--backend tpu", "meshplan: error: --backend: 'tpu' is not one of cpu, cuda"}}) {
    const testing::CliResult r = Run(std::string(kTiny) + "-q " + bad.flags);
    EXPECT_EQ(r.exit_code, 2) << bad.flags << ": " << r.err;
    EXPECT_EQ(r.err.rfind(bad.starts, 0), 0u) << bad.flags << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
}

}  // namespace
}  // namespace meshplan
