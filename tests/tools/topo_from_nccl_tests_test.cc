// Issue 32: `meshplan topo from-nccl-tests LOG -t BASE --level NAME` writes the base cluster with
// that level's bandwidth set to the log's highest bus bandwidth, a file the other commands read.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "core/cluster/topology_toml.h"
#include "tests/tools/cli_fixture.h"

namespace meshplan {
namespace {

using TopoFromNcclTests = testing::CliFixture;

// One host, 8 ranks: all_reduce_perf -g 8 (rows cut down); busbw peaks at 362.41 (in-place, 1 GiB).
constexpr const char* kOneHostLog =
    "# nThread 1 nGpus 8 minBytes 8 maxBytes 1073741824 step: 2(factor)\n"
    "#  Rank  0 Group  0 Pid  11 on     node-a device  0 [0x18] NVIDIA H100 80GB HBM3\n"
    "#  Rank  1 Group  0 Pid  11 on     node-a device  1 [0x2a] NVIDIA H100 80GB HBM3\n"
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
    "time   algbw   busbw #wrong\n"
    "           8             2     float     sum      -1    30.10    0.00    0.00      0    "
    "29.90    0.00    0.00      0\n"
    "  1073741824     268435456     float     sum      -1   5190.2  206.88  362.04      0   "
    "5185.1  207.08  362.41      0\n";

TEST_F(TopoFromNcclTests, SetsTheLevelsBandwidthToThePeakBusbw) {
  const std::string log = Write("ar.log", kOneHostLog);
  const std::string out = (dir_ / "measured.toml").string();
  const testing::CliResult r =
      Run("topo from-nccl-tests " + log + " -t dgx-h100-1node --level nvlink -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("nvlink bandwidth 450 -> 362.4 GB/s per GPU"), std::string::npos) << r.err;
  auto t = LoadTopologyFile(out);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_DOUBLE_EQ(t->levels[0].bandwidth_bytes_per_s, 362.41e9);
  // The file plans.
  EXPECT_EQ(Run("plan -t " + out + " --seq 64K -q --top 1").exit_code, 0);
}

TEST_F(TopoFromNcclTests, RefusesAnUnknownLevelAMissingLogAndALogWithoutRows) {
  const std::string log = Write("ar.log", kOneHostLog);
  ExpectRefused(
      "topo from-nccl-tests " + log + " -t dgx-h100-1node --level pcie",
      "--level: 'pcie' is not a level of dgx-h100-1node (nvlink, ib)");  // the file has an ib level
                                                                         // of 1 node
  const std::string missing = (dir_ / "missing.log").string();
  ExpectRefused("topo from-nccl-tests " + missing + " -t dgx-h100-1node --level nvlink",
                missing + ": cannot read the nccl-tests log");
  const std::string empty = Write("empty.log", "# nothing\n");
  ExpectRefusedWith("topo from-nccl-tests " + empty + " -t dgx-h100-1node --level nvlink",
                    {"empty.log: no nccl-tests result rows"});
}

TEST_F(TopoFromNcclTests, ALongPathAndARepeatedRankLineStillWriteAValidFile) {
  // Issue 49: the provenance comment was built in a 512-byte buffer, so a long log path cut it
  // off and the next line (name = ...) joined the comment: the file did not load. A 400-character
  // path, and a log whose "Rank 0" line appears twice, must give a file that loads and plans.
  const std::string long_name = std::string(200, 'l') + "/" + std::string(200, 'm') + ".log";
  std::filesystem::create_directories(dir_ / std::string(200, 'l'));
  const std::string text = std::string(kOneHostLog) +
                           "#  Rank  0 Group  0 Pid  11 on     node-a device  0 [0x18] NVIDIA H100 "
                           "80GB HBM3\n";
  const std::string log = Write(long_name, text);
  const std::string out = (dir_ / "measured.toml").string();
  const testing::CliResult r =
      Run("topo from-nccl-tests " + log + " -t dgx-h100-1node --level nvlink -q -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;  // -q: nothing on stderr
  auto t = LoadTopologyFile(out);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->name, "dgx-h100-1node");
  EXPECT_DOUBLE_EQ(t->levels[0].bandwidth_bytes_per_s, 362.41e9);
}

// Issue 48: a second pass (another level measured) keeps the first's provenance; the lines are
// the file's `provenance` key, written by the TOML writer, so they load back whole.
TEST_F(TopoFromNcclTests, ProvenanceAccumulatesAcrossPasses) {
  const std::string log = Write("one.log", kOneHostLog);
  const std::string first = (dir_ / "first.toml").string(),
                    second = (dir_ / "second.toml").string();
  ASSERT_EQ(Run("topo new --gpu h100 --nodes 4 -q -o " + (dir_ / "base.toml").string()).exit_code,
            0);
  testing::CliResult r = Run("topo from-nccl-tests " + log + " -t " +
                             (dir_ / "base.toml").string() + " --level nvlink -q -o " + first);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = Run("topo from-nccl-tests " + log + " -t " + first + " --level ib -q -o " + second);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto t = LoadTopologyFile(second);
  ASSERT_TRUE(t.ok()) << t.status().message();
  ASSERT_EQ(t->provenance.size(), 2u);
  EXPECT_EQ(
      t->provenance[0].rfind("h100-4x8: level nvlink's bandwidth_GBps set to 362.4 (was 450)", 0),
      0u)
      << t->provenance[0];
  EXPECT_EQ(t->provenance[1].rfind("h100-4x8: level ib's bandwidth_GBps set to 362.4 (was 50)", 0),
            0u)
      << t->provenance[1];
  EXPECT_NE(t->provenance[1].find(log), std::string::npos) << t->provenance[1];
}

TEST_F(TopoFromNcclTests, ALogFromDevZeroIsRefusedNotReadWhole) {
  // Issue 49: /dev/zero was read without a cap (4 GiB in 10-20 s); the capped reader stops at
  // 64 MiB with one line.
  const testing::CliResult r =
      Run("topo from-nccl-tests /dev/zero -t dgx-h100-1node --level nvlink");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("/dev/zero: larger than 64 MiB"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace meshplan
