// `meshplan plan --gpus N`: the cluster's first N GPUs, and a plan file made so runs on the same
// cluster file scaled again (tools/cli_common.cc SameNameAsPlan); with --model the header names
// the whole step's command (docs/training-step.md says why that search is `step --search`).
#include <gtest/gtest.h>

#include <string>

#include "tests/tools/cli_fixture.h"

namespace meshplan {
namespace {

using PlanGpus = testing::CliFixture;

TEST_F(PlanGpus, PlansOnTheFirstGpusAndItsPlanFileReplays) {
  // dgx-h100-32node is 32 nodes of 8: 64 GPUs are its first 8 nodes.
  const std::string plan = (dir_ / "p.toml").string();
  const testing::CliResult r =
      Run("plan -t dgx-h100-32node --gpus 64 --seq 64K --schemes ring -q --top 1 -o " + plan);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("cluster:  64 x H100"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("dgx-h100-32node@64"), std::string::npos) << r.out;
  const std::string text = Read(plan);
  EXPECT_NE(text.find("name = \"dgx-h100-32node@64\""), std::string::npos) << text;
  EXPECT_NE(text.find("gpus = 64"), std::string::npos) << text;
  const testing::CliResult sim = Run("simulate " + plan + " -q");
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  EXPECT_NE(sim.out.find("64 x H100"), std::string::npos) << sim.out;
}

TEST_F(PlanGpus, ACountThatSplitsANodeIsRefused) {
  ExpectRefusedWith("plan --gpus 60",
                    {"--gpus: dgx-h100-32node: cannot scale to 60 GPUs", "8 GPUs of one"});
  ExpectRefusedWith("plan --gpus zero", {"--gpus"});
}

TEST_F(PlanGpus, AModelsHeaderNamesTheWholeStepsSearch) {
  const testing::CliResult r = Run("plan --model llama-3.1-8b --seq 64K --top 1 -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("step:     the whole training step and its TP x CP x DP x PP search: "
                       "meshplan step --model llama-3.1-8b --search\n"),
            std::string::npos)
      << r.out;
}

}  // namespace
}  // namespace meshplan
