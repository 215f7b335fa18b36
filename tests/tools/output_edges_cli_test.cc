// Issue 49 at the edges of the CLI: parallel `simulate --format csv --append -o F` runs, as
// scripts start them, keep every row; appends to a FIFO and to /dev/full answer at once; -q is
// quiet; one file for two outputs and output directories on /proc are refused before any work.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "tests/tools/cli_fixture.h"

namespace meshplan {
namespace {

class AppendCli : public testing::CliFixture {};

TEST_F(AppendCli, SixteenParallelWritersKeepEveryRow) {
  const std::string topology = WriteFourGpuTopology();
  const std::string plan = (dir_ / "plan.toml").string();
  ASSERT_EQ(Run("plan -t " + topology +
                " --seq 4K --heads 8 --kv-heads 8 --schemes ring -q --out " + plan)
                .exit_code,
            0);
  const std::string csv = (dir_ / "runs.csv").string();
  // 16 writers started together, twice: 32 rows after one header (each run appends one row).
  const std::string one = std::string(MESHPLAN_BINARY) + " simulate " + plan + " -t " + topology +
                          " --format csv --append -q -o " + csv;
  const std::string round = "for i in $(seq 16); do " + one + " & done; wait";
  ASSERT_EQ(std::system(("sh -c '" + round + "; " + round + "'").c_str()), 0);
  const std::string text = Read(csv);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 33) << text;
  EXPECT_EQ(text.rfind("plan,scheme,parameters,", 0), 0u) << text.substr(0, 200);
  size_t headers = 0;
  for (size_t at = text.find("plan,scheme,"); at != std::string::npos;
       at = text.find("plan,scheme,", at + 1)) {
    ++headers;
  }
  EXPECT_EQ(headers, 1u);
}

TEST_F(AppendCli, AFifoGetsTheRowWithoutAWaitAndDevFullSaysNoSpace) {
  const std::string topology = WriteFourGpuTopology();
  const std::string plan = (dir_ / "plan.toml").string();
  ASSERT_EQ(Run("plan -t " + topology +
                " --seq 4K --heads 8 --kv-heads 8 --schemes ring -q --out " + plan)
                .exit_code,
            0);
  const std::string fifo = (dir_ / "pipe").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // A reader drains the FIFO into a file; the append must not try to read the FIFO itself.
  const std::string got = (dir_ / "got.csv").string(), err = (dir_ / "err").string();
  // Both sides under `timeout`: a writer that never opens the FIFO must not hang the suite.
  const std::string run = "timeout 60 " + std::string(MESHPLAN_BINARY) + " simulate " + plan +
                          " -t " + topology + " --format csv --append -q -o " + fifo + " 2>" + err;
  const int status = std::system(
      ("sh -c '" + run + " & timeout 60 cat " + fifo + " > " + got + "; wait $!'").c_str());
  EXPECT_EQ(status, 0) << Read(err);
  const std::string rows = Read(got);
  EXPECT_EQ(std::count(rows.begin(), rows.end(), '\n'), 1) << rows;  // the row, no header
  const testing::CliResult full =
      Run("simulate " + plan + " -t " + topology + " --format csv --append -q -o /dev/full");
  EXPECT_EQ(full.exit_code, 1) << full.err;
  EXPECT_NE(full.err.find("No space left on device"), std::string::npos) << full.err;
}

}  // namespace
}  // namespace meshplan

namespace meshplan {
namespace {

class QuietAndPathsCli : public testing::CliFixture {};

TEST_F(QuietAndPathsCli, QuietPlanOutWritesNothingOnStderr) {
  // Issue 49: -q still printed "meshplan: wrote plan #1 ..." (and --seq-round's note).
  const std::string plan = (dir_ / "plan.toml").string();
  const testing::CliResult r = Run(
      "plan -t dgx-h100-4gpu --seq 4001 --seq-round up --heads 8 --kv-heads 8 --schemes ring -q "
      "--out " +
      plan);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  EXPECT_FALSE(Read(plan).empty());
}

TEST_F(QuietAndPathsCli, OneFileForTraceAndTimelineIsRefusedBeforeTheReplay) {
  // Issue 49: the same path to --trace and --timeline silently kept only the timeline.
  const std::string plan = (dir_ / "plan.toml").string();
  ASSERT_EQ(
      Run("plan -t dgx-h100-4gpu --seq 4K --heads 8 --kv-heads 8 --schemes ring -q --out " + plan)
          .exit_code,
      0);
  const std::string both = (dir_ / "both.out").string();
  ExpectRefused(
      "simulate " + plan + " --trace " + both + " --timeline " + both,
      "--trace and --timeline: the same file (" + both + "), which would keep only one of them");
  EXPECT_FALSE(std::filesystem::exists(both));
}

TEST_F(QuietAndPathsCli, OutputsOnProcAreRefusedBeforeTheRun) {
  // Issue 49: `execute --outputs /proc/nonexistent/x` ran the plan and exited 1.
  const std::string plan = (dir_ / "plan.toml").string();
  ASSERT_EQ(
      Run("plan -t dgx-h100-4gpu --seq 4K --heads 8 --kv-heads 8 --schemes ring -q --out " + plan)
          .exit_code,
      0);
  ExpectRefused("execute " + plan + " --outputs /proc/nonexistent/x",
                "--outputs: /proc/nonexistent/x: cannot be created: /proc is on the kernel's /proc "
                "file system, where no file is created");
}

TEST_F(QuietAndPathsCli, AClosedPipeIsOneErrorLineAndExitOne) {
  // Issue 49: `meshplan ... | head -c 1` died of SIGPIPE (141) without a word; docs/usage.md
  // promises exit 1 and a line. The JSON of every default plan is far more than a pipe buffer
  // (64 KiB), so the write after head has gone fails.
  const std::string err = (dir_ / "err").string(), rc = (dir_ / "rc").string();
  const std::string cmd = std::string(MESHPLAN_BINARY) +
                          " plan -q --format json --top 0 --all-variants 2>" + err +
                          " | head -c 1 >/dev/null; echo ${PIPESTATUS[0]} > " + rc;
  ASSERT_EQ(std::system(("bash -c '" + cmd + "'").c_str()), 0);
  EXPECT_EQ(Read(rc), "1\n");
  EXPECT_EQ(Read(err),
            "meshplan: error: writing to standard output failed (a full disk or a closed pipe): "
            "the output is incomplete\n");
}

TEST_F(QuietAndPathsCli, UnderMpiABadFlagIsOneLineFromRankZeroOnly) {
  // Issue 49: `mpirun -np 4 meshplan execute ... --transport mpi --timeout-s 0` printed the same
  // error once per rank. The launcher's rank (OMPI_COMM_WORLD_RANK here) decides who says it;
  // every rank exits 2.
  const std::string plan = (dir_ / "plan.toml").string();
  ASSERT_EQ(
      Run("plan -t dgx-h100-4gpu --seq 4K --heads 8 --kv-heads 8 --schemes ring -q --out " + plan)
          .exit_code,
      0);
  const std::string bad = "execute " + plan + " --transport mpi --timeout-s 0";
  const testing::CliResult other = Run(bad, "OMPI_COMM_WORLD_RANK=2");
  EXPECT_EQ(other.exit_code, 2);
  EXPECT_TRUE(other.err.empty()) << other.err;
  const testing::CliResult zero = Run(bad, "OMPI_COMM_WORLD_RANK=0");
  EXPECT_EQ(zero.exit_code, 2);
  EXPECT_EQ(zero.err,
            "meshplan: error: --timeout-s: must be a number of seconds in [0.001, 1e6]\n");
  // The same for what the command-line parser refuses before any command runs: an unknown flag
  // and an empty value (every rank parses the same line).
  for (const std::string& line : {"execute " + plan + " --transport mpi --bogus",
                                  "execute " + plan + " --transport mpi --timeout-s ''"}) {
    const testing::CliResult quiet = Run(line, "OMPI_COMM_WORLD_RANK=1");
    EXPECT_EQ(quiet.exit_code, 2) << line;
    EXPECT_TRUE(quiet.err.empty()) << line << ": " << quiet.err;
    const testing::CliResult first = Run(line, "OMPI_COMM_WORLD_RANK=0");
    EXPECT_EQ(first.exit_code, 2) << line;
    EXPECT_EQ(std::count(first.err.begin(), first.err.end(), '\n'), 1) << line << ": " << first.err;
    EXPECT_EQ(first.err.rfind("meshplan: error: ", 0), 0u) << line << ": " << first.err;
  }
}

}  // namespace
}  // namespace meshplan
