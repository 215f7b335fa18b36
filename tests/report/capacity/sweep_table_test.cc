// Sweep rows as CSV and JSON: one row per point and scheme, invalid rows with their reason.
#include "report/capacity/sweep_table.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "core/cluster/topology_toml.h"
#include "planner/schemes/registry.h"

namespace meshplan::report {
namespace {

using capacity::RunSweep;
using capacity::SweepSpec;

TEST(SweepOutput, CsvAndJsonHaveOneRowPerPointAndScheme) {
  SweepSpec spec;
  spec.topologies = {DefaultTopology()};
  spec.gpus = {8, 16};
  spec.seq_lens = {int64_t{64} << 10};
  spec.schemes = {Scheme("ring"), Scheme("ulysses")};
  auto rows = RunSweep(spec);
  ASSERT_TRUE(rows.ok());
  const std::string csv = SweepCsv(*rows);
  EXPECT_EQ(csv.rfind("topology,gpus,seq_len,scheme,valid,parameters,time_s", 0), 0u) << csv;
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 5);
  // Every line has the header's number of fields (reasons and parameters hold no commas here).
  const size_t header_commas = std::count(csv.begin(), csv.begin() + csv.find('\n'), ',');
  size_t start = 0;
  while (start < csv.size()) {
    const size_t end = csv.find('\n', start);
    EXPECT_EQ(static_cast<size_t>(std::count(csv.begin() + start, csv.begin() + end, ',')),
              header_commas)
        << csv.substr(start, end - start);
    start = end + 1;
  }
  EXPECT_NE(csv.find("dgx-h100-32node,16,65536,ulysses,false,,"), std::string::npos) << csv;
  EXPECT_NE(csv.find("head-parallel degree 16 exceeds the 8 KV heads"), std::string::npos);

  const std::string json = SweepJson(*rows);
  EXPECT_EQ(json.rfind("{\"rows\":[{\"topology\":\"dgx-h100-32node\",\"gpus\":8,\"seq_len\":65536,"
                       "\"scheme\":\"ring\","
                       "\"valid\":true,",
                       0),
            0u)
      << json;
  size_t objects = 0;
  for (size_t at = json.find("\"scheme\":"); at != std::string::npos;
       at = json.find("\"scheme\":", at + 1))
    ++objects;
  EXPECT_EQ(objects, 4u);
  EXPECT_NE(json.find("\"valid\":false,\"reason\":\"head-parallel degree 16"), std::string::npos)
      << json;
}

// Issue 32: `sweep --format table` (the default on a terminal) is for people: units, no
// 17-digit numbers, an invalid row's reason in a last column. Values derived by hand.
TEST(SweepOutput, TheTextTableShowsUnitsAndReasons) {
  capacity::SweepRow valid;
  valid.topology = "t";
  valid.gpus = 1024;
  valid.seq_len = 1 << 20;
  valid.scheme = Scheme("ring");
  valid.valid = true;
  valid.params.scheme = Scheme("ring");
  valid.time_s = 0.5;             // "500.0 ms" (ShortSeconds, 4 digits)
  valid.exposed_comm_s = 0.125;   // "125.0 ms"
  valid.comm_share = 0.25;        // "25.0%"
  valid.bytes_per_gpu = 1 << 30;  // "1.00 GiB"
  valid.peak_memory_bytes = 512;  // "512 B"
  valid.fits = true;
  capacity::SweepRow invalid = valid;
  invalid.valid = false;
  invalid.reason = "too few KV heads";
  const std::string t = SweepTextTable({valid, invalid});
  EXPECT_EQ(t.rfind("topology  gpus  seq  scheme  plan", 0), 0u) << t;
  EXPECT_NE(t.find("\nt         1024  1M   ring    zigzag"), std::string::npos) << t;
  EXPECT_NE(t.find("\n--"), std::string::npos) << t;  // a rule under the header
  EXPECT_NE(t.find("500.0 ms  125.0 ms  25.0%  1.00 GiB"), std::string::npos) << t;
  EXPECT_NE(t.find("512 B  yes   -"), std::string::npos) << t;   // not simulated: "-"
  EXPECT_NE(t.find("no valid plan\n"), std::string::npos) << t;  // the last header column
  EXPECT_NE(
      t.find("-         -         -      -          -      -     -          too few KV heads\n"),
      std::string::npos)
      << t;
  EXPECT_EQ(t.find("e+"), std::string::npos) << t;
  EXPECT_EQ(std::count(t.begin(), t.end(), '\n'), 4) << t;  // header, rule, two rows
}

}  // namespace
}  // namespace meshplan::report
