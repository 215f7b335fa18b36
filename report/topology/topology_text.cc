#include "report/topology/topology_text.h"

#include <cstdio>

#include "core/base/units.h"

namespace meshplan::report {
namespace {

// The GPU's lines: model, memory, peaks, kernel curves and the model's per-GPU terms.
std::string GpuText(const Topology& t) {
  char buffer[256];
  std::string out = "name:        " + t.name + "\n";
  if (!t.description.empty()) out += "description: " + t.description + "\n";
  out += "source:      " + t.source + "\n";
  out += "GPUs:        " + std::to_string(t.num_gpus()) + " x " + t.gpu.model +
         (t.gpu.catalog.empty() ? "" : " (GPU catalog: " + t.gpu.catalog + ")") + "\n";
  std::snprintf(buffer, sizeof buffer,
                "memory:      %s per GPU, HBM %.0f GB/s, launch overhead %.1f us\n",
                FormatBytes(t.gpu.memory_bytes).c_str(), t.gpu.hbm_bytes_per_s / 1e9,
                t.gpu.launch_overhead_s * 1e6);
  out += buffer;
  out += "peak:       ";
  for (const auto& [dtype, tflops] : t.gpu.peak_tflops) {
    std::snprintf(buffer, sizeof buffer, " %s %.4g TFLOP/s", std::string(DTypeName(dtype)).c_str(),
                  tflops);
    out += buffer;
  }
  std::string others;
  for (const auto& [name, curve] : t.gpu.attention_kernels) {
    if (name != t.gpu.attention_kernel) others += (others.empty() ? "" : ", ") + name;
  }
  out += "\nattention kernel: " + t.gpu.attention_kernel +
         (others.empty() ? "" : " (curves also for " + others + ": --attention-kernel)");
  if (t.gpu.efficiency_head_dim > 0) {
    std::snprintf(buffer, sizeof buffer, "\nattention efficiency (d = %lld):",
                  static_cast<long long>(t.gpu.efficiency_head_dim));
    out += buffer;
  } else {
    out += "\nattention efficiency:";
  }
  for (const EfficiencyPoint& p : t.gpu.attention_efficiency) {
    std::snprintf(buffer, sizeof buffer, " %s:%.0f%%", FormatCount(p.block_tokens).c_str(),
                  p.efficiency * 100);
    out += buffer;
  }
  if (t.gpu.backward_rate_ratio != 1.0) {
    std::snprintf(buffer, sizeof buffer, "\nbackward kernels at %.3gx the forward's rate",
                  t.gpu.backward_rate_ratio);
    out += buffer;
  }
  if (t.gpu.pair_overhead_flops > 0) {
    std::snprintf(buffer, sizeof buffer,
                  "\nnon-matmul work %.3g FLOPs per pair and head (d = 64 runs at %.2fx, d = 32 at "
                  "%.2fx the rate of d = %lld)",
                  t.gpu.pair_overhead_flops, t.gpu.HeadDimRateFactor(64),
                  t.gpu.HeadDimRateFactor(32), static_cast<long long>(t.gpu.efficiency_head_dim));
    out += buffer;
  }
  if (t.gpu.ranks_per_device > 1) {
    std::snprintf(buffer, sizeof buffer,
                  "\nshared device: %lld ranks per device, %.3g kernels at full rate, %s sharing",
                  static_cast<long long>(t.gpu.ranks_per_device), t.gpu.concurrent_kernels,
                  std::string(DeviceSharingName(t.gpu.sharing)).c_str());
    out += buffer;
  }
  return out;
}

// The network levels, innermost first, one line each.
std::string LevelsText(const Topology& t) {
  char buffer[256];
  std::string out = "\nlevels (innermost first):\n";
  for (int i = 0; i < t.num_levels(); ++i) {
    const NetworkLevel& l = t.levels[i];
    std::snprintf(
        buffer, sizeof buffer,
        "  %d %-8s %-13s group %-5lld (%lld GPUs) %7.1f GB/s per %s per direction, %.2f us, "
        "oversubscription %.2g",
        i, l.name.c_str(), std::string(LinkKindName(l.kind)).c_str(),
        static_cast<long long>(l.group_size), static_cast<long long>(t.Span(i)),
        l.bandwidth_bytes_per_s / 1e9, t.IsFullMesh(i) ? "link" : "GPU", l.latency_s * 1e6,
        l.oversubscription);
    out += buffer;
    if (!l.torus_dims.empty()) {
      out += ", dims";
      for (int64_t d : l.torus_dims) out += " " + std::to_string(d);
    }
    out += "\n";
    for (const LevelFabric& f : l.fabrics) {
      std::string units;
      for (const auto& [first, last] : f.units) {
        units += (units.empty() ? "" : ", ") + std::to_string(first) +
                 (last == first ? "" : "-" + std::to_string(last));
      }
      std::snprintf(buffer, sizeof buffer,
                    "    fabric %-8s %7.1f GB/s per GPU per direction, %.2f us", f.name.c_str(),
                    f.bandwidth_bytes_per_s / 1e9, f.latency_s * 1e6);
      out += buffer;
      out += ", on " + std::string(i == 0 ? "GPUs " : "groups of " + t.levels[i - 1].name + " ") +
             units + "\n";
    }
  }
  return out;
}

// What calibrate recorded of the conditions it measured under, one line ("" for a file it did
// not write).
std::string CalibrationText(const CalibrationRecord& c) {
  if (!c.recorded() && !c.has_reference() && !c.has_draw_range()) return "";
  char buffer[256];
  std::string out = "\ncalibrated: ";
  std::string sep;
  if (c.recorded()) {
    std::snprintf(buffer, sizeof buffer, "load %.2f", c.load_average);
    out += buffer;
    if (c.cores > 0) out += " on " + std::to_string(c.cores) + " cores";
    sep = ", ";
  }
  if (c.other_processes_cores >= 0) {
    std::snprintf(buffer, sizeof buffer, "%sother processes %.2f cores", sep.c_str(),
                  c.other_processes_cores);
    out += buffer;
    sep = ", ";
  }
  if (c.kernel_median_error >= 0) {
    std::snprintf(buffer, sizeof buffer, "%skernel fit %.1f%% median, %.1f%% max", sep.c_str(),
                  100 * c.kernel_median_error, 100 * c.kernel_max_error);
    out += buffer;
    sep = ", ";
  }
  if (c.has_reference()) {
    std::snprintf(buffer, sizeof buffer, "%sreference block %.3g ms (d = %lld)", sep.c_str(),
                  1e3 * c.reference_block_s, static_cast<long long>(c.reference_head_dim));
    out += buffer;
    if (c.speed_spread >= 0) {
      std::snprintf(buffer, sizeof buffer, ", moving %.1f%% meanwhile", 100 * c.speed_spread);
      out += buffer;
    }
    sep = ", ";
  }
  if (c.has_draw_range()) {
    std::snprintf(buffer, sizeof buffer, "%sthe median of %lld draws, predicting %.3f-%.3fx",
                  sep.c_str(), static_cast<long long>(c.draws), c.draw_low, c.draw_high);
    out += buffer;
    sep = ", ";
  }
  return out;
}

}  // namespace

std::string TopologyText(const Topology& t) {
  return GpuText(t) + CalibrationText(t.calibration) + LevelsText(t);
}

}  // namespace meshplan::report
