// CombineDraws: each fitted value the median over the draws, worked out by hand.
#include "executor/calibration/calibration_draws.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "core/cluster/topology_toml.h"

namespace meshplan::exec {
namespace {

struct DrawValues {
  double peak_tflops;
  double eff128, eff512;
  double backward = 1.1, cut = 30, pair = 100, hbm_gbps = 33, concurrent = 2;
  double lag_us = 100, lag_fraction = 0.03;
  const char* sharing = "processor";
  double latency_us = 25, bandwidth_gbps = 3.4;
  double reference_us = 4000, speed_spread = 0.01, other_cores = 0;
  int64_t second_block = 512;
};

// A calibration as calibrate writes it for 2 ranks on one device.
Topology Draw(const DrawValues& v) {
  char text[2048];
  std::snprintf(text, sizeof text, R"(name = "machine"
[gpu]
model = "CPU"
memory_GB = 16
hbm_GBps = %g
launch_overhead_us = 0
peak_tflops = { bf16 = %g, fp16 = %g, fp32 = %g }
attention_efficiency = [[128, %g], [%lld, %g]]
backward_rate_ratio = %g
efficiency_head_dim = 64
pair_overhead_flops = %g
cut_row_extra_pairs = %g
ranks_per_device = 2
concurrent_kernels = %g
sharing = "%s"
copies_take_compute = true
sharing_end_lag_us = %g
sharing_end_lag_fraction = %g

[calibration]
load_average = 0.5
cores = 2
kernel_median_error = 0.02
kernel_max_error = 0.1
other_processes_cores = %g
reference_block_us = %g
reference_head_dim = 64
speed_spread = %g

[[level]]
name = "threads"
kind = "switch"
group_size = 2
bandwidth_GBps = %g
latency_us = %g
)",
                v.hbm_gbps, v.peak_tflops, v.peak_tflops, v.peak_tflops, v.eff128,
                static_cast<long long>(v.second_block), v.eff512, v.backward, v.pair, v.cut,
                v.concurrent, v.sharing, v.lag_us, v.lag_fraction, v.other_cores, v.reference_us,
                v.speed_spread, v.bandwidth_gbps, v.latency_us);
  auto t = ParseTopologyToml(text, "draw.toml");
  EXPECT_TRUE(t.ok()) << t.status().message();
  return t.ok() ? *t : Topology{};
}

TEST(CombineDraws, EachValueIsTheMedianOfTheDraws) {
  DrawValues a{.peak_tflops = 0.030, .eff128 = 0.9, .eff512 = 1.0};
  DrawValues b{.peak_tflops = 0.020, .eff128 = 1.0, .eff512 = 0.8};
  DrawValues c{.peak_tflops = 0.040, .eff128 = 0.5, .eff512 = 1.0};
  b.backward = 1.2, c.backward = 1.0;
  b.cut = 40, c.cut = 20;
  b.sharing = "serial", c.sharing = "serial";
  b.latency_us = 50, c.latency_us = 10;
  b.bandwidth_gbps = 2.0, c.bandwidth_gbps = 5.0;
  b.lag_us = 300, c.lag_us = 50;
  b.reference_us = 5000, c.reference_us = 4500;
  b.speed_spread = 0.04, c.speed_spread = 0.02;
  b.other_cores = 0.3;
  auto combined = CombineDraws({Draw(a), Draw(b), Draw(c)});
  ASSERT_TRUE(combined.ok()) << combined.status().message();
  const GpuSpec& g = combined->gpu;
  // Rates (TFLOP/s): at 128 tokens 0.027, 0.020, 0.020 -> 0.020; at 512 0.030, 0.016, 0.040 ->
  // 0.030. The peak is the faster median, 0.030; the curve 0.020 / 0.030 = 0.6667 and 1.
  EXPECT_DOUBLE_EQ(g.peak_tflops.at(DType::kFp32), 0.03);
  EXPECT_DOUBLE_EQ(g.peak_tflops.at(DType::kBf16), 0.03);
  ASSERT_EQ(g.attention_efficiency.size(), 2u);
  EXPECT_DOUBLE_EQ(g.attention_efficiency[0].efficiency, 0.6667);
  EXPECT_DOUBLE_EQ(g.attention_efficiency[1].efficiency, 1.0);
  EXPECT_DOUBLE_EQ(g.backward_rate_ratio, 1.1);                        // 1.1, 1.2, 1.0
  EXPECT_DOUBLE_EQ(g.cut_row_extra_pairs, 30);                         // 30, 40, 20
  EXPECT_DOUBLE_EQ(g.sharing_end_lag_s, 100e-6);                       // 100, 300, 50 us
  EXPECT_EQ(g.sharing, DeviceSharing::kSerial);                        // two of three said serial
  EXPECT_DOUBLE_EQ(combined->levels[0].latency_s, 25e-6);              // 25, 50, 10 us
  EXPECT_DOUBLE_EQ(combined->levels[0].bandwidth_bytes_per_s, 3.4e9);  // 3.4, 2, 5 GB/s
  const CalibrationRecord& r = combined->calibration;
  EXPECT_DOUBLE_EQ(r.reference_block_s, 4500e-6);  // 4000, 5000, 4500 us
  EXPECT_DOUBLE_EQ(r.speed_spread, 0.04);          // the largest
  EXPECT_DOUBLE_EQ(r.other_processes_cores, 0.3);  // the most disturbed draw's
  // The range is the caller's to measure: none yet.
  EXPECT_EQ(r.draws, 0);
  EXPECT_FALSE(r.has_draw_range());
}

TEST(CombineDraws, OneDrawIsItself) {
  const Topology a = Draw({.peak_tflops = 0.030, .eff128 = 0.9, .eff512 = 1.0});
  auto combined = CombineDraws({a});
  ASSERT_TRUE(combined.ok()) << combined.status().message();
  EXPECT_EQ(TopologyToToml(*combined), TopologyToToml(a));
}

TEST(CombineDraws, RefusesNoDrawsAndDrawsOfAnotherCalibration) {
  EXPECT_EQ(CombineDraws({}).status().code(), ErrorCode::kInvalidInput);
  const Topology a = Draw({.peak_tflops = 0.030, .eff128 = 0.9, .eff512 = 1.0});
  DrawValues other{.peak_tflops = 0.030, .eff128 = 0.9, .eff512 = 1.0};
  other.second_block = 1024;
  auto combined = CombineDraws({a, Draw(other)});
  ASSERT_FALSE(combined.ok());
  EXPECT_EQ(combined.status().code(), ErrorCode::kInvalidInput);
  EXPECT_NE(combined.status().message().find("draw 2 is not a calibration like the first: block "
                                             "sizes differ"),
            std::string::npos)
      << combined.status().message();
}

}  // namespace
}  // namespace meshplan::exec
