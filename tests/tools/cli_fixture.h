// A temporary directory and the meshplan binary run in it, for the CLI tests of issue 17's cases
// (tests/tools/*_test.cc beside this file).
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <string>

namespace meshplan::testing {

struct CliResult {
  int exit_code = -1;  // -1 when the process did not exit normally (a signal: a crash)
  std::string out, err;
};

class CliFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("meshplan_cli17_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Runs `meshplan ARGS` through /bin/sh (ARGS is shell text), stdin from /dev/null; `env`
  // (shell text, e.g. "NAME=value") is set for it alone.
  CliResult Run(const std::string& args, const std::string& env = "") {
    const std::string out = (dir_ / "stdout").string(), err = (dir_ / "stderr").string();
    const std::string cmd = (env.empty() ? "" : env + " ") + std::string(MESHPLAN_BINARY) + " " +
                            args + " >" + out + " 2>" + err + " </dev/null";
    const int status = std::system(cmd.c_str());
    CliResult r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = Read(out);
    r.err = Read(err);
    return r;
  }
  static std::string Read(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  std::string Write(const std::string& name, const std::string& text) {
    const std::filesystem::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }
  // Exit code 2 and exactly one stderr line, "meshplan: error: " followed by `message`.
  void ExpectRefused(const std::string& args, const std::string& message) {
    const CliResult r = Run(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    EXPECT_EQ(r.err, "meshplan: error: " + message + "\n") << args;
    EXPECT_TRUE(r.out.empty()) << args << "\n" << r.out;
  }
  // Exit code 2 and one stderr line starting "meshplan: error: " and holding every part.
  void ExpectRefusedWith(const std::string& args, std::initializer_list<std::string> parts) {
    const CliResult r = Run(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    EXPECT_EQ(r.err.rfind("meshplan: error: ", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "expected one line:\n" << r.err;
    for (const std::string& part : parts)
      EXPECT_NE(r.err.find(part), std::string::npos) << args << "\n" << r.err;
  }
  // A cluster of 4 GPUs on one switch, as four.toml in the directory; returns its path.
  std::string WriteFourGpuTopology(const std::string& name = "four-gpus") {
    return Write("four.toml", "name = \"" + name + "\"\n" + R"toml([gpu]
model = "H100 SXM5 80GB"
memory_GB = 80
hbm_GBps = 3350
launch_overhead_us = 4
peak_tflops = { bf16 = 989, fp16 = 989, fp32 = 494 }
attention_efficiency = [[512, 0.30], [16384, 0.62]]
[[level]]
name = "nvlink"
kind = "switch"
group_size = 4
bandwidth_GBps = 450
latency_us = 0.94
)toml");
  }
  // A 4-rank mesh plan (S=256, Hq=4, Hkv=2, d=16) on WriteFourGpuTopology(), as p.toml.
  std::string MakeFourRankPlan() {
    const std::string topology = WriteFourGpuTopology();
    const std::string plan = (dir_ / "p.toml").string();
    const CliResult r =
        Run("plan -t " + topology +
            " --seq 256 --heads 4 --kv-heads 2 --head-dim 16 -q --schemes mesh --out " + plan);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return plan;
  }
  std::string Source(const std::string& relative) const {
    return std::string(MESHPLAN_SOURCE_DIR) + "/" + relative;
  }

  std::filesystem::path dir_;
};

}  // namespace meshplan::testing
