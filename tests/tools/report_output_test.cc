// Issue 32: `-o FILE` and `-q` on every command that prints a report, the file holding exactly
// what stdout would have shown; `calibrate --format` and `topo list --format table`.
#include <gtest/gtest.h>

#include <string>

#include "tests/tools/cli_fixture.h"

namespace meshplan {
namespace {

using ReportOutput = testing::CliFixture;

TEST_F(ReportOutput, TopoListAndShowWriteTheirReportWhereOSays) {
  for (const std::string& command :
       {std::string("topo list"), std::string("topo list --format json"),
        std::string("topo show dgx-h100-4node"),
        std::string("topo show dgx-h100-4node --format json"),
        std::string("topo show dgx-h100-4node --format toml")}) {
    const testing::CliResult shown = Run(command);
    ASSERT_EQ(shown.exit_code, 0) << command << "\n" << shown.err;
    ASSERT_FALSE(shown.out.empty()) << command;
    const std::string file = (dir_ / "report.out").string();
    const testing::CliResult written = Run(command + " -o " + file + " -q");
    ASSERT_EQ(written.exit_code, 0) << command << "\n" << written.err;
    EXPECT_TRUE(written.out.empty()) << command << "\n" << written.out;
    EXPECT_TRUE(written.err.empty()) << command << "\n" << written.err;
    EXPECT_EQ(Read(file), shown.out) << command;
    // Without -q, one line names the file.
    const testing::CliResult noted = Run(command + " -o " + file);
    ASSERT_EQ(noted.exit_code, 0) << command << "\n" << noted.err;
    EXPECT_EQ(noted.err, "meshplan: wrote the report to " + file + "\n") << command;
  }
  // `table` is topo list's format name, as everywhere a table is printed; `text` still works.
  EXPECT_EQ(Run("topo list --format table").out, Run("topo list --format text").out);
  // A path that cannot be written: exit 2 naming -o, nothing on stdout.
  const testing::CliResult bad = Run("topo list -o " + (dir_ / "missing" / "x").string());
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("-o"), std::string::npos) << bad.err;
  EXPECT_TRUE(bad.out.empty()) << bad.out;
}

TEST_F(ReportOutput, TopoNewIsQuietWithQ) {
  const std::string file = (dir_ / "c.toml").string();
  testing::CliResult r = Run("topo new --gpu h100 --nodes 2 -o " + file);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("meshplan: wrote"), std::string::npos) << r.err;
  r = Run("topo new --gpu h100 --nodes 2 -q -o " + file);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
}

TEST_F(ReportOutput, CalibrateNamesItsFormats) {
  // Refused before any measuring: the message names the flag, the value and the choices.
  ExpectRefusedWith("calibrate --format xml", {"--format", "xml", "toml", "json"});
}

}  // namespace
}  // namespace meshplan
