// `meshplan calibrate` end to end: refusals before any measuring, and (CalibrateSmoke, run alone
// by CTest) a calibrated machine predicting a real execute within a loose bound.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "core/cluster/topology_toml.h"
#include "tests/testing/foreign_load.h"

namespace meshplan {
namespace {

namespace fs = std::filesystem;

struct Ran {
  int exit_code = -1;
  std::string out, err;
};

class CalibrateCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("meshplan_calibrate_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  // `env` (shell text, e.g. "NAME=value") is set for the command alone.
  Ran Run(const std::string& args, const std::string& env = "") {
    const std::string out = (dir_ / "stdout").string(), err = (dir_ / "stderr").string();
    const int status = std::system(((env.empty() ? "" : env + " ") + std::string(MESHPLAN_BINARY) +
                                    " " + args + " >" + out + " 2>" + err)
                                       .c_str());
    Ran r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = Read(out);
    r.err = Read(err);
    return r;
  }
  static std::string Read(const fs::path& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  // Exit 2, one stderr line with `needle`, and nothing written at `out` (when given).
  void ExpectRefused(const std::string& args, const std::string& needle, const fs::path& out = {},
                     const std::string& env = "") {
    const Ran r = Run(args, env);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    EXPECT_EQ(r.err.rfind("meshplan: error: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << args << "\n" << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    if (!out.empty()) {
      EXPECT_FALSE(fs::exists(out)) << out;
    }
  }
  fs::path dir_;
};

TEST_F(CalibrateCli, RefusesBadFlagsBeforeMeasuring) {
  const fs::path out = dir_ / "m.toml";
  ExpectRefused("calibrate --quick --ranks 0 -o " + out.string(), "--ranks", out);
  ExpectRefused("calibrate --quick --ranks -3 -o " + out.string(), "--ranks", out);
  ExpectRefused("calibrate --quick --ranks 300 -o " + out.string(), "--ranks", out);
  ExpectRefused("calibrate --quick --head-dim 0 -o " + out.string(), "--head-dim", out);
  ExpectRefused("calibrate --quick --backend tpu -o " + out.string(), "--backend", out);
  // Issue 34 changed this refusal: --backend cuda measures a GPU now, so it is refused only where
  // none is usable. No device is visible here on any machine (CUDA_VISIBLE_DEVICES is empty), so
  // the refusal, exit 2 with one line naming --backend, holds with a GPU too.
  ExpectRefused("calibrate --quick --backend cuda -o " + out.string(), "--backend", out,
                "CUDA_VISIBLE_DEVICES=");
  ExpectRefused("calibrate --quick --kernels tensor -o " + out.string(), "--kernels", out);
  ExpectRefused("calibrate --quick --backend cpu --kernels auto -o " + out.string(), "--kernels",
                out);
  ExpectRefused("calibrate --quick --transport mpi -o " + out.string(), "--transport", out);
  // An output that cannot be written is refused at once, not after the measuring.
  ExpectRefused("calibrate --quick -o " + (dir_ / "missing" / "m.toml").string(), "does not exist");
  ExpectRefused("calibrate --quick -o " + dir_.string(), "is a directory");
}

// --backend cuda as the binary was built (issue 34): without CUDA in the build, refused as not
// built; with it but no usable device (no driver, or none visible: CUDA_VISIBLE_DEVICES empty
// hides every GPU, so this holds on a GPU machine too), refused in one line that names --backend
// cuda and the reason, before anything is measured or written. Its own flags are checked first.
TEST_F(CalibrateCli, CudaWithoutADeviceSaysWhyInOneLine) {
  const fs::path out = dir_ / "gpu.toml";
  const bool built = Run("--version").out.find("cuda") != std::string::npos;
  if (!built) {
    ExpectRefused("calibrate --backend cuda --quick -o " + out.string(), "not built", out);
    return;
  }
  const Ran r =
      Run("calibrate --backend cuda --ranks 8 --quick -o " + out.string(), "CUDA_VISIBLE_DEVICES=");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err.rfind("meshplan: error: --backend cuda: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("CUDA"), std::string::npos) << r.err;  // the reason: no driver or device
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_FALSE(fs::exists(out));
  ExpectRefused("calibrate --backend cuda --kernels fast -o " + out.string(), "--kernels", out);
  ExpectRefused("calibrate --backend cuda --transport threads -o " + out.string(), "--transport",
                out);
}

// Runs only where CTest starts it alone (tests/CMakeLists.txt: CalibrateSmoke, RUN_SERIAL), so
// no other test shares the cores while it times them.
// Issue 32: the smoke test failed (ratio 2.17) when the calibration ran under one load and the
// execute under another; issue 48: under a steady load of 7-9 on 2 cores too. ForeignCores
// (tests/testing/foreign_load.h) tells such runs apart.
using testing::ForeignCores;

TEST_F(CalibrateCli, SmokeCalibratedMachinePredictsAnExecute) {
  if (std::getenv("MESHPLAN_SERIAL_SMOKE") == nullptr)
    GTEST_SKIP() << "run by CTest as CalibrateSmoke";
  const fs::path machine = dir_ / "machine.toml", plan = dir_ / "plan.toml";
  // A calibration and an execute under load from other processes (CTest runs this test alone,
  // but the machine may not be ours alone) compare two machines, not the model: issue 48 saw
  // ratios of 2.3 and 4.8 at a load of 7-9 on 2 cores, steady across both phases. So an attempt
  // counts only when other processes took at most half a core in each phase; it is measured
  // again, at most 3 times, and without a quiet attempt the test says so and skips. The bound
  // below applies to the first quiet one.
  // ForeignCores sees only this machine's processes; a host that slows the whole machine (another
  // guest on the same cores: CI saw a ratio of 1.74 with no foreign process on 2026-11-30) shows
  // in the reference block that execute times before and after its runs (machine_speed): an
  // attempt also counts only when that block ran within 20% of its calibrated time, both times.
  constexpr double kMaxForeignCores = testing::kQuietForeignCores;
  constexpr double kMaxSpeedDrift = 1.2;
  Ran r;
  auto number_after = [&](const std::string& object, const std::string& key) {
    const size_t at = r.out.find("\"" + object + "\"");
    EXPECT_NE(at, std::string::npos) << r.out;
    const size_t k = r.out.find("\"" + key + "\"", at);
    EXPECT_NE(k, std::string::npos) << r.out;
    return std::strtod(r.out.c_str() + r.out.find(':', k) + 1, nullptr);
  };
  double calibrate_load = 0, execute_load = 0, speed_drift = 0;
  for (int attempt = 1; attempt <= 3; ++attempt) {
    calibrate_load = ForeignCores(
        [&] { r = Run("calibrate --quick --ranks 2 --head-dim 64 -q -o " + machine.string()); });
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto topo = LoadTopologyFile(machine.string());
    ASSERT_TRUE(topo.ok()) << topo.status().message();
    EXPECT_EQ(topo->num_gpus(), 2);
    EXPECT_EQ(topo->gpu.ranks_per_device, 2);
    EXPECT_TRUE(topo->gpu.copies_take_compute);  // the threads transport copies on the cores
    // The machine's speed: the reference block at the calibration's head dim, and its spread.
    EXPECT_GT(topo->calibration.reference_block_s, 0);
    EXPECT_EQ(topo->calibration.reference_head_dim, 64);
    EXPECT_GE(topo->calibration.speed_spread, 0);
    r = Run("plan -t " + machine.string() +
            " --seq 4K --heads 4 --kv-heads 4 --head-dim 64 --dtype fp32 --mask causal --pass fwd "
            "--schemes ring"
            " --out " +
            plan.string());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    execute_load = ForeignCores([&] {
      r = Run("execute " + plan.string() + " -t " + machine.string() +
              " --repeat 3 -q --format json");
    });
    ASSERT_EQ(r.exit_code, 0) << r.err;
    // The block's time before and after the runs over the calibration's, the larger way round.
    const double calibration_s = number_after("machine_speed", "calibration_s");
    ASSERT_GT(calibration_s, 0) << r.out;
    const double before = number_after("machine_speed", "before_s") / calibration_s,
                 after = number_after("machine_speed", "after_s") / calibration_s;
    speed_drift = std::max({before, 1 / before, after, 1 / after});
    std::printf(
        "attempt %d: other processes used %.2f cores during calibrate, %.2f during execute; "
        "the reference block ran at %.2fx and %.2fx its calibrated time\n",
        attempt, calibrate_load, execute_load, before, after);
    if (calibrate_load <= kMaxForeignCores && execute_load <= kMaxForeignCores &&
        speed_drift <= kMaxSpeedDrift)
      break;
  }
  if (calibrate_load > kMaxForeignCores || execute_load > kMaxForeignCores) {
    GTEST_SKIP() << "other processes used " << calibrate_load << " cores during calibrate and "
                 << execute_load << " during execute in the last of 3 attempts (quiet: at most "
                 << kMaxForeignCores << "): not a quiet machine, nothing to compare";
  }
  if (speed_drift > kMaxSpeedDrift) {
    GTEST_SKIP() << "the reference block ran " << speed_drift
                 << "x away from its calibrated time around the execute in the last of 3 attempts "
                    "(steady: within "
                 << kMaxSpeedDrift << "x): the machine changed speed, nothing to compare";
  }
  // The median measured time over the simulated one. The bound: the fidelity target allows 20%
  // model error (docs/fidelity.md); a busy 2-core machine adds run-to-run noise, seen up to 40%
  // when another build shares it. 1.2 x 1.4 = 1.68 < 1.7, so noise and model error together stay
  // inside [1/1.7, 1.7], while a model off by 2x (ratio 2 or 1/2) falls outside.
  const double measured = number_after("measured", "time_s"),
               predicted = number_after("predicted", "time_s");
  ASSERT_GT(predicted, 0);
  const double ratio = measured / predicted;
  std::printf("calibrated prediction: measured %.4g s, predicted %.4g s, ratio %.3f\n", measured,
              predicted, ratio);
  EXPECT_GT(ratio, 1 / 1.7) << "measured " << measured << " s, predicted " << predicted << " s";
  EXPECT_LT(ratio, 1.7) << "measured " << measured << " s, predicted " << predicted << " s";
}

// A cluster file with calibrate's reference block (written here by hand onto a shipped file):
// `execute` on CPU threads times the block before and after its runs and reports the machine's
// speed beside the prediction; `plan` says when the block moved more than 5% while calibrating.
TEST_F(CalibrateCli, TheReferenceBlockIsTimedAroundAnExecuteAndNotedOnPlans) {
  const fs::path machine = dir_ / "machine.toml", plan = dir_ / "plan.toml";
  auto write_machine = [&](double spread) {
    std::ifstream shipped(std::string(MESHPLAN_SOURCE_DIR) + "/topologies/dgx-h100-4gpu.toml");
    std::stringstream text;
    text << shipped.rdbuf();
    std::ofstream(machine) << text.str()
                           << "\n[calibration]\nreference_block_us = 1000\nreference_head_dim = "
                              "32\nspeed_spread = "
                           << spread << "\n";
  };
  write_machine(0.2);
  Ran r = Run("plan -t " + machine.string() +
              " --seq 1K --heads 4 --kv-heads 4 --head-dim 32 --dtype fp32 --schemes ring --out " +
              plan.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("machine.toml: this machine's speed moved 20.0% while it was calibrated"),
            std::string::npos)
      << r.err;
  r = Run("execute " + plan.string() + " -t " + machine.string() + " -q --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"machine_speed\":{\"reference_block_tokens\":512,\"head_dim\":32,"
                       "\"calibration_s\":0.001,\"calibration_spread\":0.2,\"before_s\":"),
            std::string::npos)
      << r.out;
  r = Run("execute " + plan.string() + " -t " + machine.string() + " -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\nspeed:     the 512-token reference block (head dim 32) took "),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  time at this speed (x"), std::string::npos) << r.out;
  // Moved 1%: no note.
  write_machine(0.01);
  r = Run("plan -t " + machine.string() + " --seq 1K --heads 4 --kv-heads 4 --head-dim 32");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("speed moved"), std::string::npos) << r.err;
}

// `--draws` out of 1..9 is refused before anything is measured or written.
TEST_F(CalibrateCli, RefusesDrawsOutOfRange) {
  const fs::path out = dir_ / "m.toml";
  ExpectRefused("calibrate --quick --draws 0 -o " + out.string(), "--draws: must be in 1..9", out);
  ExpectRefused("calibrate --quick --draws 10 -o " + out.string(),
                "--draws: must be in 1..9, got 10", out);
}

// Issue 48 item 2: two draws, each a process of its own, combined into one file that records
// them and the range their predictions took; topo show and execute read it. What the values are
// depends on the machine: here only that they are there and consistent (the arithmetic is
// tests/executor/calibration/calibration_draws_test.cc's and tests/capacity/draw_range_test.cc's).
TEST_F(CalibrateCli, DrawsAreCombinedAndTheirRangeRecorded) {
  const fs::path machine = dir_ / "machine.toml", plan = dir_ / "plan.toml";
  // One rank: a quick calibration takes about 5 s (no sharing race, no messages).
  Ran r = Run("calibrate --quick --ranks 1 --head-dim 32 --draws 2 -o " + machine.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("calibrate: draw 1 of 2, a process of its own\n"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("calibrate: draw 2 of 2, a process of its own\n"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("calibrate: 2 draws combined, each value their median"), std::string::npos)
      << r.err;
  auto topology = LoadTopologyFile(machine.string());
  ASSERT_TRUE(topology.ok()) << topology.status().message();
  const CalibrationRecord& c = topology->calibration;
  EXPECT_EQ(c.draws, 2);
  ASSERT_TRUE(c.has_draw_range());
  EXPECT_LE(c.draw_low, 1.0);
  EXPECT_GE(c.draw_high, 1.0);
  EXPECT_TRUE(c.has_reference());
  EXPECT_EQ(Read(machine).rfind("# Written by meshplan calibrate --draws 2, ", 0), 0u);
  r = Run("topo show " + machine.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("the median of 2 draws, predicting "), std::string::npos) << r.out;
  r = Run("plan -t " + machine.string() +
          " --seq 1K --heads 4 --kv-heads 2 --head-dim 32 --dtype fp32 --schemes ring -q --out " +
          plan.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = Run("execute " + plan.string() + " -t " + machine.string() + " -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("  range over 2 draws"), std::string::npos) << r.out;
}

// A hand-written record of draws (on a shipped file): plan notes a range wider than 5%, execute
// shows the prediction's range and JSON carries it.
TEST_F(CalibrateCli, ADrawRangeIsNotedOnPlansAndShownByExecute) {
  const fs::path machine = dir_ / "machine.toml", plan = dir_ / "plan.toml";
  std::ifstream shipped(std::string(MESHPLAN_SOURCE_DIR) + "/topologies/dgx-h100-4gpu.toml");
  std::stringstream text;
  text << shipped.rdbuf();
  std::ofstream(machine) << text.str() << "\n[calibration]\ndraws = 3\ndraw_range = [0.5, 2]\n";
  Ran r = Run("plan -t " + machine.string() +
              " --seq 1K --heads 4 --kv-heads 4 --head-dim 32 --dtype fp32 --schemes ring --out " +
              plan.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("machine.toml: calibrated as the median of 3 draws"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("lie 0.50-2.00x this file's"), std::string::npos) << r.err;
  r = Run("execute " + plan.string() + " -t " + machine.string() + " -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("  range over 3 draws"), std::string::npos) << r.out;
  r = Run("execute " + plan.string() + " -t " + machine.string() + " -q --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"draw_range\":{\"draws\":3,\"low_s\":"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace meshplan
