// Sweep rows as CSV and JSON: one row per point and scheme, invalid rows with their reason.
#include "report/sweep_table.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "core/topology_toml.h"
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

}  // namespace
}  // namespace meshplan::report
