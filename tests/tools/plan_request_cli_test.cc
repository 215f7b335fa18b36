// One planning request through every command that plans (issue 45): plan, sweep, fit and bench
// take the same planning flags (--model, --tp, --framework, --seq-round) with the same effect, so
// the same request gives the same best plan and time in each. The expected values are plan's own
// answer: the test checks agreement between the commands, not a figure.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "tests/tools/cli_fixture.h"
#include "tests/tools/json_reader.h"

namespace meshplan {
namespace {

using testing::Json;

class PlanRequestCli : public testing::CliFixture {
 protected:
  // One DGX H100 (8 GPUs, one node: fit's only cluster size up to 8 GPUs), Llama 3.1 8B (32/8
  // heads, 32 layers) under TP 2: CP groups of 4 GPUs, 16/4 heads each. 100001 tokens rounded up
  // to a multiple of 2 x 4 = 8 is 100008. Megatron keeps the plans TransformerEngine runs.
  static constexpr const char* kRequest =
      "-t dgx-h100-1node --model llama-3.1-8b --seq 100001 --seq-round up --tp 2 "
      "--framework megatron -q --format json";

  Json Parse(const testing::CliResult& r) {
    Json j;
    EXPECT_TRUE(Json::Parse(r.out, &j)) << r.err << r.out.substr(0, 400);
    return j;
  }
  static std::string Text(const Json* object, const std::string& key) {
    const Json* v = object == nullptr ? nullptr : object->Find(key);
    return v == nullptr ? "<missing " + key + ">" : v->string;
  }
  static double Number(const Json* object, const std::string& key) {
    const Json* v = object == nullptr ? nullptr : object->Find(key);
    return v == nullptr ? std::nan("") : v->number;
  }
};

TEST_F(PlanRequestCli, PlanSweepAndFitAgreeOnTheBestPlanAndItsTime) {
  const testing::CliResult plan = Run(std::string("plan ") + kRequest + " --top 1");
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  const Json p = Parse(plan);
  const Json* plans = p.Find("plans");
  ASSERT_TRUE(plans != nullptr && !plans->items.empty());
  const Json& best = plans->items.front();
  const std::string scheme = Text(&best, "scheme"), params = Text(&best, "parameters");
  const double time_s = Number(&best, "time_s");
  const double all_layers_s = Number(&best, "all_layers_s");
  ASSERT_GT(time_s, 0);
  // Llama 3.1 8B has only global layers: all of them is 32 x one layer.
  EXPECT_NEAR(all_layers_s, 32 * time_s, 1e-9 * all_layers_s);
  // The workload as fields: the sequence rounded, the heads divided by TP, TransformerEngine's
  // partials in bf16.
  const Json* workload = p.Find("workload");
  EXPECT_EQ(Number(workload, "seq"), 100008);
  EXPECT_EQ(Number(workload, "heads"), 16);
  EXPECT_EQ(Number(workload, "kv_heads"), 4);
  EXPECT_EQ(Number(workload, "head_dim"), 128);
  EXPECT_EQ(Text(workload, "partial_dtype"), "bf16");
  EXPECT_EQ(Text(workload, "mask"), "causal");

  // sweep: the row of the plan's scheme holds the same plan; no fitting row of another scheme
  // is faster over all layers (plan ranks by them).
  const testing::CliResult sweep = Run(std::string("sweep ") + kRequest);
  ASSERT_EQ(sweep.exit_code, 0) << sweep.err;
  const Json s = Parse(sweep);
  const Json* rows = s.Find("rows");
  ASSERT_NE(rows, nullptr);
  int matched = 0;
  for (const Json& row : rows->items) {
    EXPECT_EQ(Number(&row, "seq_len"), 100008);
    EXPECT_EQ(Number(&row, "tp"), 2);
    const Json* valid = row.Find("valid");
    if (valid == nullptr || !valid->boolean) continue;
    if (Text(&row, "scheme") == scheme) {
      ++matched;
      EXPECT_EQ(Text(&row, "parameters"), params);
      EXPECT_NEAR(Number(&row, "time_s"), time_s, 1e-12 * time_s);
      EXPECT_NEAR(Number(&row, "all_layers_s"), all_layers_s, 1e-12 * all_layers_s);
    } else {
      EXPECT_GE(Number(&row, "all_layers_s"), all_layers_s) << Text(&row, "scheme");
      // Megatron runs no Mesh or ATTENTION2D plan: those rows say why.
    }
  }
  EXPECT_EQ(matched, 1);
  for (const Json& row : rows->items) {
    if (Text(&row, "scheme") == "mesh") {
      EXPECT_NE(Text(&row, "reason").find("--framework megatron"), std::string::npos);
    }
  }

  // fit: with a budget just above the plan's time for all 32 layers, the smallest cluster is the
  // whole node (fewer GPUs are slower), running the same plan.
  const std::string budget = std::to_string(all_layers_s * 1.001);
  const testing::CliResult fit =
      Run(std::string("fit ") + kRequest + " --max-gpus 8 --budget-s " + budget);
  ASSERT_EQ(fit.exit_code, 0) << fit.err;
  const Json f = Parse(fit);
  EXPECT_EQ(Number(&f, "gpus"), 8);
  EXPECT_EQ(Text(&f, "scheme"), scheme);
  EXPECT_EQ(Text(&f, "parameters"), params);
  EXPECT_NEAR(Number(&f, "time_s"), time_s, 1e-9 * time_s);
}

TEST_F(PlanRequestCli, BenchRunsThePlanThatPlanPicks) {
  // A workload the CPU runs in well under a second: 1K tokens, 8/4 heads of 32 over TP 2 (4/2 per
  // GPU), CP groups of 4 ranks, yunchang's schemes.
  const std::string request =
      "-t dgx-h100-1node --seq 1K --mask causal --heads 8 --kv-heads 4 --head-dim 32 --dtype fp32 "
      "--tp 2 --framework yunchang -q --format json";
  const testing::CliResult plan = Run("plan " + request + " --top 1");
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  const Json p = Parse(plan);
  const Json& best = p.Find("plans")->items.front();
  const std::string scheme = Text(&best, "scheme");

  const testing::CliResult bench =
      Run("bench " + request + " --repeat 1 --schemes " + scheme, "OMP_NUM_THREADS=1");
  ASSERT_EQ(bench.exit_code, 0) << bench.err;
  const Json b = Parse(bench);
  const Json* rows = b.Find("rows");
  ASSERT_TRUE(rows != nullptr && rows->items.size() == 1) << bench.out;
  const Json& row = rows->items.front();
  EXPECT_EQ(Text(&row, "scheme"), scheme);
  EXPECT_EQ(Text(&row, "parameters"), Text(&best, "parameters"));
  EXPECT_EQ(Number(&row, "ranks"), 4);  // one CP group: 8 GPUs / TP 2
  EXPECT_EQ(Text(&row, "outcome"), "ran");
}

TEST_F(PlanRequestCli, EveryPlanningCommandRefusesAFrameworkItCannotPlanAlike) {
  for (const char* command : {"plan", "sweep", "fit", "bench"}) {
    const testing::CliResult r = Run(std::string(command) + " --framework magi -q");
    EXPECT_EQ(r.exit_code, 2) << command << "\n" << r.err;
    EXPECT_NE(r.err.find("MagiAttention"), std::string::npos) << command << "\n" << r.err;
  }
}

}  // namespace
}  // namespace meshplan
