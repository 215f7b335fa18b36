// Issue 17's cases for the flags and helpers every command shares (tools/cli_common.cc): sizes,
// workload bounds, topology files, plan topologies, escaped messages, --reserve-gib.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <string>

#include "tests/tools/cli_fixture.h"

namespace meshplan {
namespace {

using Cli17 = testing::CliFixture;

TEST_F(Cli17, SeqZeroToAPowerIsOneErrorLineNotSigfpe) {
  ExpectRefused("plan --seq 0^2",
                "--seq: '0^2' is not a valid count: the base of a power must be at least 1");
}

TEST_F(Cli17, SeqWithAHugeExponentIsDecidedAtOnce) {
  // Issue 17: --seq 1^9999999999 spun for 11 s. 1^N is 1: the 256-GPU default cluster then has
  // no valid plan for 1 token (exit 2 naming S=1) -- at once.
  const auto start = std::chrono::steady_clock::now();
  ExpectRefusedWith("plan --seq 1^9999999999", {"no scheme has a valid plan for B=1 S=1 "});
  ExpectRefused("plan --seq 2^9999999999",
                "--seq: '2^9999999999' is not a valid count: too large (exponent 9999999999 is "
                "larger than 62)");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 10.0);
}

TEST_F(Cli17, DocumentsFileWithZeroToAPowerIsOneErrorLineNotSigfpe) {
  const std::string docs = Write("docs.txt", "2048\n0^2\n");
  ExpectRefused(
      "plan --seq 4K --mask docs:" + docs,
      "--mask: " + docs +
          ":2: document length: '0^2' is not a valid count: the base of a power must be at "
          "least 1");
}

TEST_F(Cli17, BatchOf2To62IsRefused) {
  // 2^62 x 2^20 x 64 x 128 elements do not fit in int64, let alone under 2^56.
  ExpectRefused("plan --batch 2^62",
                "workload: batch (4611686018427387904) x seq (1048576) x heads (64) x head-dim "
                "(128) is more than "
                "the 2^56 elements a tensor may have");
}

TEST_F(Cli17, ReserveGibNanAndHugeAreRefused) {
  for (const char* value : {"nan", "1e308", "inf"}) {
    ExpectRefused(std::string("plan --reserve-gib ") + value,
                  "--reserve-gib: must be a finite number of GiB, at most 1e6");
    ExpectRefused(std::string("fit --reserve-gib ") + value,
                  "--reserve-gib: must be a finite number of GiB, at most 1e6");
    ExpectRefused(std::string("sweep --reserve-gib ") + value,
                  "--reserve-gib: must be a finite number of GiB, at most 1e6");
  }
}

TEST_F(Cli17, TopologyWithMemoryOf1e308GBIsRefused) {
  // The shipped file names its GPU's catalog entry; the value is laid over the entry's 80 GB.
  std::string text = Read(Source("topologies/dgx-h100-4node.toml"));
  const std::string catalog = "catalog = \"h100-sxm5\"\n";
  const size_t at = text.find(catalog);
  ASSERT_NE(at, std::string::npos);
  text.insert(at + catalog.size(), "memory_GB = 1e308\n");
  const std::string path = Write("huge.toml", text);
  ExpectRefused("plan -t " + path, path + ": gpu.memory_GB: must be at most 1e+06");
}

TEST_F(Cli17, ADirectoryGivenAsTheTopologyFileSaysItIsADirectory) {
  // Issue 17: it reported "name: missing required key".
  ExpectRefused("plan -t " + dir_.string(), dir_.string() + ": is a directory, expected a file");
}

TEST_F(Cli17, PlanWhoseTopologyNameDisagreesWithItsSourceIsRefused) {
  const std::string plan = MakeFourRankPlan();  // made for "four-gpus" from four.toml
  const std::string topology = WriteFourGpuTopology("renamed");  // the file changed since
  ExpectRefused(
      "simulate " + plan,
      plan + ": topology.name: the plan was made for topology 'four-gpus', but its source '" +
          topology +
          "' describes 'renamed'; pass --topology FILE to run it on that "
          "cluster anyway");
  // Named explicitly, the cluster is the user's choice.
  const testing::CliResult r = Run("simulate " + plan + " --topology " + topology);
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(Cli17, ControlBytesFromTheCommandLineAreEscapedOnOneLine) {
  ExpectRefused("plan --seq \"$(printf '1\\n2')\"",
                "--seq: '1\\n2' is not a valid count: unexpected character '\\n'");
  ExpectRefused("plan --mask \"$(printf 'a\\033b')\"",
                "--mask: unknown mask 'a\\x1bb' (expected full, causal, window:W, prefix:N, "
                "docs:FILE, docs-full:FILE, "
                "docs-sampled:SPEC or docs-full-sampled:SPEC)");
}

TEST_F(Cli17, ControlBytesFromAFileAreEscapedOnOneLine) {
  // A quoted TOML key holding a newline and a BEL (the TOML escapes \n and \u0007, which the
  // parser decodes), echoed by the unknown-key error.
  std::string text = Read(Source("topologies/dgx-h100-4node.toml"));
  text = "\"bad\\nkey\\u0007\" = 1\n" + text;
  const std::string path = Write("keys.toml", text);
  ExpectRefused("plan -t " + path, path + ": unknown key 'bad\\nkey\\x07'");
}

TEST_F(Cli17, OutputThroughASymlinkReplacesItsTargetAndKeepsTheLink) {
  const std::string target = (dir_ / "plan.toml").string(), link = (dir_ / "link.toml").string();
  Write("plan.toml", "old\n");
  std::filesystem::create_symlink(target, link);
  const testing::CliResult r = Run("plan --seq 64K -q --top 1 --out " + link);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::filesystem::is_symlink(link));
  EXPECT_EQ(Read(target).rfind("# meshplan plan", 0), 0u);
}

}  // namespace
}  // namespace meshplan
