// `topo show`'s text (report/topology/topology_text.h): the line of what calibrate recorded.
#include "report/topology/topology_text.h"

#include <gtest/gtest.h>

#include <string>

#include "core/cluster/topology_toml.h"

namespace meshplan::report {
namespace {

bool HasLine(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

TEST(TopologyText, ACalibrationSaysWhatItWasMeasuredUnder) {
  Topology topo = DefaultTopology();
  EXPECT_FALSE(HasLine(TopologyText(topo), "calibrated:"));  // not a calibration
  CalibrationRecord& c = topo.calibration;
  c.load_average = 0.5;
  c.cores = 2;
  c.other_processes_cores = 0;
  c.kernel_median_error = 0.029;
  c.kernel_max_error = 0.065;
  c.reference_block_s = 4.41e-3;
  c.reference_head_dim = 64;
  c.speed_spread = 0.062;
  const std::string t = TopologyText(topo);
  EXPECT_TRUE(HasLine(t,
                      "\ncalibrated: load 0.50 on 2 cores, other processes 0.00 cores, kernel fit "
                      "2.9% median, 6.5% max, reference block 4.41 ms (d = 64), moving 6.2% "
                      "meanwhile\nlevels (innermost first):\n"))
      << t;
}

}  // namespace
}  // namespace meshplan::report
