#include "executor/calibration/calibration_draws.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "executor/calibration/calibration.h"

namespace meshplan::exec {
namespace {

// Every draw's value of `get`, their median.
template <class Get>
double MedianOf(const std::vector<Topology>& draws, Get get) {
  std::vector<double> values;
  values.reserve(draws.size());
  for (const Topology& t : draws) values.push_back(get(t));
  return Median(std::move(values));
}

// Keeps 4 significant digits, as calibrate writes its values.
double Round4(double x) {
  if (!(x != 0) || !std::isfinite(x)) return x;
  const double scale = std::pow(10.0, 3 - std::floor(std::log10(std::fabs(x))));
  return std::round(x * scale) / scale;
}

// Why draw `i` is not a draw of the same calibration as the first ("" when it is).
std::string Mismatch(const Topology& first, const Topology& other) {
  const GpuSpec &a = first.gpu, &b = other.gpu;
  if (a.ranks_per_device != b.ranks_per_device) return "ranks per device differ";
  if (a.efficiency_head_dim != b.efficiency_head_dim) return "head dims differ";
  if (a.attention_efficiency.size() != b.attention_efficiency.size()) return "block sizes differ";
  for (size_t k = 0; k < a.attention_efficiency.size(); ++k) {
    if (a.attention_efficiency[k].block_tokens != b.attention_efficiency[k].block_tokens)
      return "block sizes differ";
  }
  if (!a.peak_tflops.count(DType::kFp32) || !b.peak_tflops.count(DType::kFp32))
    return "no fp32 peak";
  if (first.levels.size() != other.levels.size() || first.levels.empty())
    return "network levels differ";
  if (first.levels[0].group_size != other.levels[0].group_size) return "ranks differ";
  return "";
}

}  // namespace

Result<Topology> CombineDraws(const std::vector<Topology>& draws) {
  if (draws.empty()) return Status::Invalid("calibrate --draws: no draws to combine");
  for (size_t i = 1; i < draws.size(); ++i) {
    const std::string why = Mismatch(draws[0], draws[i]);
    if (!why.empty()) {
      return Status::Invalid("calibrate --draws: draw " + std::to_string(i + 1) +
                             " is not a calibration like the first: " + why);
    }
  }
  Topology out = draws[0];
  GpuSpec& gpu = out.gpu;
  // Rates by block size, then the curve of their medians.
  std::vector<double> rates;
  for (size_t k = 0; k < gpu.attention_efficiency.size(); ++k) {
    rates.push_back(MedianOf(draws, [k](const Topology& t) {
      return t.gpu.peak_tflops.at(DType::kFp32) * t.gpu.attention_efficiency[k].efficiency;
    }));
  }
  const double peak = *std::max_element(rates.begin(), rates.end());
  for (size_t k = 0; k < rates.size(); ++k)
    gpu.attention_efficiency[k].efficiency = std::clamp(Round4(rates[k] / peak), 1e-3, 1.0);
  for (auto& [dtype, tflops] : gpu.peak_tflops) tflops = Round4(peak);
  gpu.backward_rate_ratio =
      Round4(MedianOf(draws, [](const Topology& t) { return t.gpu.backward_rate_ratio; }));
  gpu.cut_row_extra_pairs =
      Round4(MedianOf(draws, [](const Topology& t) { return t.gpu.cut_row_extra_pairs; }));
  gpu.pair_overhead_flops =
      Round4(MedianOf(draws, [](const Topology& t) { return t.gpu.pair_overhead_flops; }));
  gpu.hbm_bytes_per_s =
      Round4(MedianOf(draws, [](const Topology& t) { return t.gpu.hbm_bytes_per_s / 1e9; })) * 1e9;
  gpu.concurrent_kernels =
      Round4(MedianOf(draws, [](const Topology& t) { return t.gpu.concurrent_kernels; }));
  gpu.sharing_end_lag_s =
      Round4(MedianOf(draws, [](const Topology& t) { return t.gpu.sharing_end_lag_s * 1e6; })) /
      1e6;
  gpu.sharing_end_lag_fraction =
      Round4(MedianOf(draws, [](const Topology& t) { return t.gpu.sharing_end_lag_fraction; }));
  const auto serial = std::count_if(draws.begin(), draws.end(), [](const Topology& t) {
    return t.gpu.sharing == DeviceSharing::kSerial;
  });
  const auto processor = static_cast<std::ptrdiff_t>(draws.size()) - serial;
  if (serial != processor)
    gpu.sharing = serial > processor ? DeviceSharing::kSerial : DeviceSharing::kProcessor;
  // The active library's curve is what the model reads; a file that also lists it by name keeps
  // the same numbers there.
  if (auto it = gpu.attention_kernels.find(gpu.attention_kernel);
      it != gpu.attention_kernels.end()) {
    AttentionKernelCurve& curve = it->second;
    curve.efficiency = gpu.attention_efficiency;
    curve.backward_rate_ratio = gpu.backward_rate_ratio;
    curve.cut_row_extra_pairs = gpu.cut_row_extra_pairs;
    curve.pair_overhead_flops = gpu.pair_overhead_flops;
  }
  NetworkLevel& level = out.levels[0];
  level.latency_s =
      Round4(MedianOf(draws, [](const Topology& t) { return t.levels[0].latency_s * 1e6; })) / 1e6;
  level.bandwidth_bytes_per_s =
      Round4(MedianOf(draws,
                      [](const Topology& t) { return t.levels[0].bandwidth_bytes_per_s / 1e9; })) *
      1e9;

  CalibrationRecord& record = out.calibration;
  record.draws = 0;
  record.draw_low = record.draw_high = 0;
  auto all = [&draws](auto has) { return std::all_of(draws.begin(), draws.end(), has); };
  if (all([](const Topology& t) { return t.calibration.has_reference(); })) {
    record.reference_block_s =
        Round4(MedianOf(draws,
                        [](const Topology& t) { return t.calibration.reference_block_s * 1e6; })) /
        1e6;
  }
  if (all([](const Topology& t) { return t.calibration.kernel_median_error >= 0; })) {
    // 3 decimals, as calibrate writes them.
    record.kernel_median_error =
        std::round(
            1000 *
            MedianOf(draws, [](const Topology& t) { return t.calibration.kernel_median_error; })) /
        1000;
    record.kernel_max_error = std::round(1000 * MedianOf(draws,
                                                         [](const Topology& t) {
                                                           return t.calibration.kernel_max_error;
                                                         })) /
                              1000;
  }
  for (const Topology& t : draws) {
    record.speed_spread = std::max(record.speed_spread, t.calibration.speed_spread);
    record.other_processes_cores =
        std::max(record.other_processes_cores, t.calibration.other_processes_cores);
  }
  MESHPLAN_RETURN_IF_ERROR(out.Validate().WithContext("calibrate --draws: the combined topology"));
  return out;
}

}  // namespace meshplan::exec
