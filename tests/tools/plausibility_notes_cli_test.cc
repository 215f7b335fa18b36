// A topology value no hardware reaches (a NIC's Gb/s written as GB/s) is said in one note, by
// every command that reads the file, topo validate included (issue 48), and not under -q, which
// leaves nothing on stderr but errors (issue 49).
#include <gtest/gtest.h>

#include <string>

#include "tests/tools/cli_fixture.h"

namespace meshplan {
namespace {

class PlausibilityNotesCli : public testing::CliFixture {
 protected:
  // 2 nodes of 8 H100s whose ib level says 400 GB/s per GPU: 3200 Gb/s, faster than any NIC.
  std::string SlipTopology() {
    return Write("slip.toml", R"toml(name = "slip"
gpu = "h100-sxm5"
[[level]]
name = "nvlink"
kind = "switch"
group_size = 8
bandwidth_GBps = 450
latency_us = 1
[[level]]
name = "ib"
kind = "rail-fat-tree"
group_size = 2
bandwidth_GBps = 400
latency_us = 5
)toml");
  }
  static constexpr const char* kNote =
      "level 'ib': 400 GB/s per GPU per direction is faster than an 800 Gb/s NIC";
};

TEST_F(PlausibilityNotesCli, TopoValidateSaysWhatPlanSays) {
  const std::string file = SlipTopology();
  const testing::CliResult v = Run("topo validate " + file);
  EXPECT_EQ(v.exit_code, 0) << v.err;
  EXPECT_NE(v.out.find("ok (16 GPUs, 2 levels)"), std::string::npos) << v.out;
  EXPECT_NE(v.err.find(kNote), std::string::npos) << v.err;
  const testing::CliResult p = Run("plan -t " + file + " --seq 64K --top 1");
  EXPECT_EQ(p.exit_code, 0) << p.err;
  EXPECT_NE(p.err.find(kNote), std::string::npos) << p.err;
}

TEST_F(PlausibilityNotesCli, QuietCommandsLeaveStderrEmpty) {
  const std::string file = SlipTopology();
  const std::string plan = (dir_ / "p.toml").string();
  for (const std::string& args :
       {"plan -t " + file + " --seq 64K --top 1 -q --out " + plan, "fit -t " + file + " -q",
        "simulate " + plan + " -t " + file + " -q"}) {
    const testing::CliResult r = Run(args);
    EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.err;
    EXPECT_EQ(r.err, "") << args;
  }
}

}  // namespace
}  // namespace meshplan
