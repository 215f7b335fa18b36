// --attention-kernel and --step-overhead-ms end to end (tools/cli_common.h ModelFlags): the
// library a plan is made with is named in the output, recorded in its plan file and used by
// simulate; bad values are one line, exit 2.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <string>

#include "tests/tools/cli_fixture.h"
#include "tests/tools/json_reader.h"

namespace meshplan {
namespace {

using testing::Json;

// Number field `key` of the first plan of a `plan --format json` output (NaN when absent).
double FirstPlanNumber(const std::string& out, const std::string& key) {
  Json j;
  if (!Json::Parse(out, &j)) return std::nan("");
  const Json* plans = j.Find("plans");
  if (plans == nullptr || plans->items.empty()) return std::nan("");
  const Json* v = plans->items.front().Find(key);
  return v == nullptr ? std::nan("") : v->number;
}

class ModelFlagsCli : public testing::CliFixture {
 protected:
  void ExpectInvalid(const std::string& args, const std::string& needle) {
    const testing::CliResult r = Run(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    EXPECT_EQ(r.err.find("meshplan: error: "), 0u) << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << args << "\n" << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "expected one line:\n" << r.err;
  }
  static constexpr const char* kSmall =
      "-t dgx-h100-1node --seq 16K --heads 32 --kv-heads 8 --pass fwd -q";
};

TEST_F(ModelFlagsCli, ThePlanNamesItsLibraryAndTheFileDefaultIsFa3) {
  const testing::CliResult r = Run(std::string("plan ") + kSmall + " --top 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("attention kernel fa3"), std::string::npos) << r.out;
  const testing::CliResult c =
      Run(std::string("plan ") + kSmall + " --top 1 --attention-kernel cudnn");
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_NE(c.out.find("attention kernel cudnn"), std::string::npos) << c.out;
}

TEST_F(ModelFlagsCli, AnotherLibraryChangesTheTimeByItsRate) {
  // Ulysses on one node is one kernel over the whole 16K sequence: its forward time scales with
  // 1 / rate. fa3 at 16K: 0.681 + (0.71 - 0.681) / 2 = 0.6955 of peak (log-linear between 8K and
  // 32K); fa2: 0.377 + (0.381 - 0.377) / 2 = 0.379. The block is cut along its diagonal: its
  // 16384 x 16385 / 2 = 134,225,920 pairs cost 16383 cut rows x cut_row_extra_pairs more (fa2 537:
  // 8,797,671; fa3 120: 1,965,960). The FLOP part of the compute (the 4 us launch of
  // dgx-h100-1node.toml apart) so grows by 0.6955 / 0.379 x 143,023,591 / 136,191,880, times
  // the two libraries' occupancy (core/cost/kernel_occupancy.h; 4 heads a GPU, 16384 rows, 132
  // SMs, 128-row tiles, curves measured at 64 heads): fa3 (1 CTA per SM) runs 512 CTAs in 4 waves
  // of 132, fill 65536 / 67584, against its curve's 8192 CTAs in 63 waves, 1048576 / 1064448:
  // factor 0.984375; fa2 (2 per SM) 512 in 2 waves of 264 and 8192 in 32, both 0.969697: factor
  // 1. fa2's time over fa3's moves by 0.984375.
  auto compute_s = [&](const std::string& library) {
    const testing::CliResult r =
        Run(std::string("plan ") + kSmall +
            " --schemes ulysses --format json --top 1 --attention-kernel " + library);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return FirstPlanNumber(r.out, "compute_s");
  };
  const double launch_s = 4e-6;
  EXPECT_NEAR((compute_s("fa2") - launch_s) / (compute_s("fa3") - launch_s),
              0.6955 / 0.379 * 143'023'591.0 / 136'191'880.0 * 0.984375, 1e-6);
}

TEST_F(ModelFlagsCli, APlanFileRecordsItsLibraryAndSimulateUsesIt) {
  const std::string plan = (dir_ / "p.toml").string();
  ASSERT_EQ(Run(std::string("plan ") + kSmall + " --attention-kernel fa2 -o " + plan).exit_code, 0);
  const testing::CliResult sim = Run("simulate " + plan + " -q");
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  EXPECT_NE(sim.out.find("attention kernel fa2"), std::string::npos) << sim.out;
  const testing::CliResult other = Run("simulate " + plan + " -q --attention-kernel fa3");
  ASSERT_EQ(other.exit_code, 0) << other.err;
  EXPECT_NE(other.out.find("attention kernel fa3"), std::string::npos) << other.out;
}

TEST_F(ModelFlagsCli, AFrameworkOverheadIsAddedOncePerCall) {
  auto time_s = [&](const std::string& extra) {
    const testing::CliResult r =
        Run(std::string("plan ") + kSmall + " --schemes ulysses --format json --top 1 " + extra);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return FirstPlanNumber(r.out, "time_s");
  };
  EXPECT_NEAR(time_s("--step-overhead-ms 2") - time_s(""), 2e-3, 1e-12);
}

TEST_F(ModelFlagsCli, APlanAtAHeadDimTheCurveDoesNotCoverGetsANote) {
  // fa3's curve is measured at d = 128 with no head-dim term: a d = 64 plan is a guess, said on
  // stderr; fa2 has the term (k = 86), d = 128 is the curve's own, and -q says nothing.
  const std::string d64 = "plan -t dgx-h100-1node --seq 16K --head-dim 64 --top 1";
  const testing::CliResult fa3 = Run(d64);
  ASSERT_EQ(fa3.exit_code, 0) << fa3.err;
  EXPECT_NE(fa3.err.find("meshplan: note: "), std::string::npos) << fa3.err;
  EXPECT_NE(fa3.err.find("the fa3 kernel curve was measured at head dim 128 and has no head-dim "
                         "term (pair_overhead_flops): head dim 64 is predicted at that rate"),
            std::string::npos)
      << fa3.err;
  EXPECT_EQ(Run(d64 + " --attention-kernel fa2").err.find("note:"), std::string::npos);
  EXPECT_EQ(Run("plan -t dgx-h100-1node --seq 16K --top 1").err.find("note:"), std::string::npos);
  EXPECT_EQ(Run(d64 + " -q").err, "");
}

TEST_F(ModelFlagsCli, ARunUnderAnotherLoadThanItsCalibrationGetsANote) {
  // A calibrated file says it was measured at a load of 1000: no machine here runs at that, so
  // execute says its prediction assumes other conditions; -q keeps it quiet.
  const std::string plan = MakeFourRankPlan();
  const std::string topology = (dir_ / "four.toml").string();
  std::ofstream(topology, std::ios::app) << "\n[calibration]\nload_average = 1000\ncores = 2\n";
  const testing::CliResult r = Run("execute " + plan + " -t " + topology);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("meshplan: note: " + topology +
                       " was calibrated at a load of 1000.0 (1-minute average) and the load is "),
            std::string::npos)
      << r.err;
  const testing::CliResult quiet = Run("execute " + plan + " -t " + topology + " -q");
  ASSERT_EQ(quiet.exit_code, 0) << quiet.err;
  EXPECT_EQ(quiet.err.find("note:"), std::string::npos) << quiet.err;
}

TEST_F(ModelFlagsCli, BadValuesAreOneLineExitTwo) {
  ExpectInvalid(std::string("plan ") + kSmall + " --attention-kernel fa4",
                "--attention-kernel: unknown attention library 'fa4'");
  ExpectInvalid("plan -t dgx-a100-1node --seq 16K -q --attention-kernel fa3",
                "dgx-a100-1node.toml: gpu.attention_kernels: no curve for 'fa3' on this GPU "
                "(it has: fa2)");
  ExpectInvalid(std::string("plan ") + kSmall + " --step-overhead-ms -1",
                "--step-overhead-ms: must be in [0, 10000] ms");
  ExpectInvalid("sweep -t dgx-h100-1node --seq 16K -q --attention-kernel xx",
                "unknown attention library 'xx'");
  ExpectInvalid("fit -t dgx-h100-1node --step-overhead-ms 1e12",
                "--step-overhead-ms: must be in [0, 10000] ms");
}

}  // namespace
}  // namespace meshplan
