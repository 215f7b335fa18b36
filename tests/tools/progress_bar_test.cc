// Issue 32: a progress bar with the time left on stderr when stderr is a terminal (sweep, bench,
// calibrate, simulate), the line per step elsewhere. The terminal is a pseudo-terminal from
// util-linux's `script` (skipped where it is missing); MESHPLAN_PROGRESS_AFTER_S=0 draws at once
// instead of after 2 s, so a small sweep shows its bar.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "tests/tools/cli_fixture.h"

namespace meshplan {
namespace {

class ProgressBarCli : public testing::CliFixture {
 protected:
  // `meshplan ARGS` with its stdout and stderr on a pseudo-terminal; what the terminal received.
  std::string OnATerminal(const std::string& args) {
    const std::string seen = (dir_ / "terminal").string();
    const std::string cmd =
        "cd " + dir_.string() + " && MESHPLAN_PROGRESS_AFTER_S=0 TERM=xterm script -qec '" +
        std::string(MESHPLAN_BINARY) + " " + args + "' /dev/null </dev/null >" + seen + " 2>&1";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd << "\n" << Read(seen);
    return Read(seen);
  }
  void SetUp() override {
    testing::CliFixture::SetUp();
    if (std::system("command -v script >/dev/null 2>&1") != 0)
      GTEST_SKIP() << "no `script` (util-linux) to make a pseudo-terminal";
  }
};

TEST_F(ProgressBarCli, SweepDrawsABarInPlaceAndErasesIt) {
  // 2 GPU counts x 2 lengths = 4 points; the rows go to a file, so the terminal sees stderr only.
  const std::string t = OnATerminal("sweep --gpus 8,16 --seq 64K,128K -o rows.csv");
  // Each drawing returns to the line's start and clears it: "\r\033[K" then the bar.
  EXPECT_NE(t.find("\r\033[Kmeshplan: sweep ["), std::string::npos) << t;
  // The last step is always drawn: a full bar at 4/4.
  EXPECT_NE(t.find("[########################] 4/4  100%"), std::string::npos) << t;
  // No line per point on a terminal, and the bar is erased before the closing line.
  EXPECT_EQ(t.find("point 1/4"), std::string::npos) << t;
  EXPECT_NE(t.find("\r\033[Kmeshplan: wrote "), std::string::npos) << t;  // rows: points x schemes
  // Off a terminal (a file): the line per point, as before.
  const testing::CliResult r =
      Run("sweep --gpus 8,16 --seq 64K,128K -o " + (dir_ / "rows2.csv").string(),
          "MESHPLAN_PROGRESS_AFTER_S=0");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("meshplan: sweep: point 1/4\n"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\r'), std::string::npos) << r.err;
}

TEST_F(ProgressBarCli, BenchKeepsItsLinePerPointAboveTheBar) {
  const std::string t =
      OnATerminal("bench --seq 1K --mask full --schemes ring,ulysses --repeat 1 -o b.txt");
  EXPECT_NE(t.find("meshplan: bench: 1/2 full 1K ring: ran in "), std::string::npos) << t;
  EXPECT_NE(t.find("meshplan: bench: 2/2 full 1K ulysses: ran in "), std::string::npos) << t;
  // Half way: half the cells, 1/2 50%, and an estimate of the time left.
  EXPECT_NE(t.find("[############            ] 1/2   50%"), std::string::npos) << t;
  EXPECT_NE(t.find(" left"), std::string::npos) << t;
}

TEST_F(ProgressBarCli, QuietMeansNoBar) {
  const std::string t = OnATerminal("sweep --gpus 8,16 --seq 64K -q -o rows.csv");
  EXPECT_EQ(t.find("meshplan: sweep ["), std::string::npos) << t;
}

}  // namespace
}  // namespace meshplan
