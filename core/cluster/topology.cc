#include "core/cluster/topology.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <utility>

#include "core/base/checked_math.h"

namespace meshplan {

std::string_view LinkKindName(LinkKind kind) {
  switch (kind) {
    case LinkKind::kSwitch:
      return "switch";
    case LinkKind::kRailFatTree:
      return "rail-fat-tree";
    case LinkKind::kFatTree:
      return "fat-tree";
    case LinkKind::kRing:
      return "ring";
    case LinkKind::kTorus:
      return "torus";
    case LinkKind::kFullMesh:
      return "full-mesh";
  }
  return "switch";
}

Result<LinkKind> ParseLinkKind(std::string_view text) {
  for (LinkKind k : {LinkKind::kSwitch, LinkKind::kRailFatTree, LinkKind::kFatTree, LinkKind::kRing,
                     LinkKind::kTorus, LinkKind::kFullMesh}) {
    if (text == LinkKindName(k)) return k;
  }
  return Status::Invalid("unknown kind '" + std::string(text) +
                         "' (expected switch, rail-fat-tree, fat-tree, ring, torus or full-mesh)");
}

std::string_view DeviceSharingName(DeviceSharing sharing) {
  return sharing == DeviceSharing::kSerial ? "serial" : "processor";
}

Result<DeviceSharing> ParseDeviceSharing(std::string_view text) {
  for (DeviceSharing s : {DeviceSharing::kProcessor, DeviceSharing::kSerial}) {
    if (text == DeviceSharingName(s)) return s;
  }
  return Status::Invalid("unknown sharing '" + std::string(text) +
                         "' (expected processor or serial)");
}

double GpuSpec::SharedComputeSlowdown() const {
  return std::max(1.0, static_cast<double>(ranks_per_device) / concurrent_kernels);
}

double GpuSpec::PeakFlopsPerSecond(DType dtype) const {
  auto it = peak_tflops.find(dtype);
  return it == peak_tflops.end() ? 0.0 : it->second * 1e12;
}

double GpuSpec::Efficiency(int64_t block_tokens) const {
  const auto& curve = attention_efficiency;
  if (curve.empty()) return 1.0;
  if (block_tokens <= curve.front().block_tokens) return curve.front().efficiency;
  if (block_tokens >= curve.back().block_tokens) return curve.back().efficiency;
  for (size_t i = 1; i < curve.size(); ++i) {
    if (block_tokens <= curve[i].block_tokens) {
      const double x0 = std::log2(static_cast<double>(curve[i - 1].block_tokens));
      const double x1 = std::log2(static_cast<double>(curve[i].block_tokens));
      const double t = (std::log2(static_cast<double>(block_tokens)) - x0) / (x1 - x0);
      return curve[i - 1].efficiency + t * (curve[i].efficiency - curve[i - 1].efficiency);
    }
  }
  return curve.back().efficiency;
}

double GpuSpec::HeadDimRateFactor(int64_t head_dim) const {
  if (head_dim <= 0 || pair_overhead_flops <= 0 || efficiency_head_dim <= 0) return 1.0;
  const double k = pair_overhead_flops;
  return (1.0 + k / (4.0 * static_cast<double>(efficiency_head_dim))) /
         (1.0 + k / (4.0 * static_cast<double>(head_dim)));
}

std::string GpuSpec::HeadDimCaveat(int64_t head_dim) const {
  if (efficiency_head_dim <= 0 || head_dim == efficiency_head_dim || pair_overhead_flops > 0)
    return "";
  const std::string d = std::to_string(head_dim);
  return "the " + attention_kernel + " kernel curve was measured at head dim " +
         std::to_string(efficiency_head_dim) +
         " and has no head-dim term (pair_overhead_flops): head dim " + d +
         " is predicted at that rate" +
         (attention_kernel == "own"
              ? " (on a CPU, 20-50% off between head dims 32 and 128; calibrate with --head-dim " +
                    d + ")"
              : " (give the library's curve at head dim " + d + ", topologies/README.md)");
}

bool IsAttentionLibrary(std::string_view name) {
  for (std::string_view library : kAttentionLibraries) {
    if (name == library) return true;
  }
  return false;
}

Status Topology::UseAttentionKernel(std::string_view library) {
  if (!IsAttentionLibrary(library)) {
    return Status::Invalid(source + ": --attention-kernel: unknown attention library '" +
                           std::string(library) + "' (expected fa2, fa3, cudnn or own)");
  }
  auto it = gpu.attention_kernels.find(std::string(library));
  if (it == gpu.attention_kernels.end()) {
    std::string names;
    for (const auto& [name, curve] : gpu.attention_kernels)
      names += (names.empty() ? "" : ", ") + name;
    return Status::Invalid(source + ": gpu.attention_kernels: no curve for '" +
                           std::string(library) + "' on this GPU (it has: " + names + ")");
  }
  gpu.attention_kernel = it->first;
  gpu.UseCurve(it->second);
  return Status::Ok();
}

void GpuSpec::UseCurve(const AttentionKernelCurve& c) {
  attention_efficiency = c.efficiency;
  backward_rate_ratio = c.backward_rate_ratio;
  efficiency_head_dim = c.head_dim;
  pair_overhead_flops = c.pair_overhead_flops;
  ring_step_partial_passes = c.ring_step_partial_passes;
  cut_row_extra_pairs = c.cut_row_extra_pairs;
  sliced_merge_passes = c.sliced_merge_passes;
  occupancy = c.occupancy;
}

std::string CalibrationRecord::LoadCaveat(double load_now) const {
  if (!recorded() || load_now < 0) return "";
  const double allowed = std::max(1.0, static_cast<double>(cores) / 4.0);
  if (std::fabs(load_now - load_average) <= allowed) return "";
  char buffer[256];
  std::snprintf(buffer, sizeof buffer,
                "calibrated at a load of %.1f (1-minute average) and the load is %.1f now: the "
                "prediction assumes the calibration's conditions (a change from 10-13 to 6 put "
                "one run 47%% off, docs/fidelity.md)",
                load_average, load_now);
  return buffer;
}

std::string CalibrationRecord::SpeedCaveat() const {
  if (!has_reference() || !(speed_spread > kSpeedSpreadNote)) return "";
  char buffer[320];
  std::snprintf(buffer, sizeof buffer,
                "this machine's speed moved %.1f%% while it was calibrated (a %.3g ms reference "
                "block timed around each phase): its predictions hold no closer than that; "
                "`execute` times the block again and shows the prediction at the speed of the "
                "moment",
                100 * speed_spread, 1e3 * reference_block_s);
  return buffer;
}

std::string CalibrationRecord::DrawCaveat() const {
  if (!has_draw_range() || (draw_low >= 1 - kSpeedSpreadNote && draw_high <= 1 + kSpeedSpreadNote))
    return "";
  char buffer[320];
  std::snprintf(buffer, sizeof buffer,
                "calibrated as the median of %lld draws (calibrations in processes of their own), "
                "whose own predictions of this machine's plans lie %.2f-%.2fx this file's: read "
                "each time as that range (docs/fidelity.md, \"Draws\")",
                static_cast<long long>(draws), draw_low, draw_high);
  return buffer;
}

Status Topology::SetStepOverheadMs(double ms) {
  if (!(ms >= 0 && ms * 1e3 <= kMaxStepOverheadUs))
    return Status::Invalid("must be in [0, " +
                           std::to_string(static_cast<int64_t>(kMaxStepOverheadUs / 1e3)) + "] ms");
  framework.step_overhead_s = ms / 1e3;
  return Status::Ok();
}

int64_t Topology::num_gpus() const { return levels.empty() ? 0 : Span(num_levels() - 1); }

int64_t Topology::Span(int level) const {
  int64_t span = 1;
  for (int i = 0; i <= level && i < num_levels(); ++i) span *= levels[i].group_size;
  return span;
}

int Topology::LevelOf(int64_t gpu_a, int64_t gpu_b) const {
  if (gpu_a == gpu_b) return -1;
  int64_t span = 1;
  for (int i = 0; i < num_levels(); ++i) {
    span *= levels[i].group_size;
    if (gpu_a / span == gpu_b / span) return i;
  }
  return num_levels() - 1;
}

int64_t Topology::Hops(int level, int64_t gpu_a, int64_t gpu_b) const {
  const NetworkLevel& l = levels[level];
  if (l.kind != LinkKind::kRing && l.kind != LinkKind::kTorus) return 1;
  const int64_t below = level == 0 ? 1 : Span(level - 1);
  const int64_t a = (gpu_a / below) % l.group_size;
  const int64_t b = (gpu_b / below) % l.group_size;
  auto ring_distance = [](int64_t x, int64_t y, int64_t n) {
    int64_t d = std::abs(x - y) % n;
    return std::min(d, n - d);
  };
  if (l.kind == LinkKind::kRing) return std::max<int64_t>(1, ring_distance(a, b, l.group_size));
  int64_t hops = 0, ra = a, rb = b;
  for (int64_t dim : l.torus_dims) {  // first dimension varies fastest
    hops += ring_distance(ra % dim, rb % dim, dim);
    ra /= dim;
    rb /= dim;
  }
  return std::max<int64_t>(1, hops);
}

bool Topology::HasHopRoutes(int level) const {
  const LinkKind kind = levels[level].kind;
  return kind == LinkKind::kRing || kind == LinkKind::kTorus;
}

std::vector<int64_t> Topology::RouteDims(int level) const {
  const NetworkLevel& l = levels[level];
  if (l.kind == LinkKind::kTorus) return l.torus_dims;
  return {l.group_size};
}

double Topology::RouteLatencySeconds(int level, int64_t gpu_a, int64_t gpu_b) const {
  const NetworkLevel& l = levels[level];
  if (!HasHopRoutes(level))
    return std::max(PortLatencySeconds(level, gpu_a), PortLatencySeconds(level, gpu_b));
  return l.latency_s * static_cast<double>(Hops(level, gpu_a, gpu_b));
}

bool LevelFabric::Holds(int64_t unit) const {
  for (const auto& [first, last] : units) {
    if (unit >= first && unit <= last) return true;
  }
  return false;
}

int64_t LevelFabric::UnitCount() const {
  int64_t n = 0;
  for (const auto& [first, last] : units) n += last - first + 1;
  return n;
}

const LevelFabric* Topology::FabricOf(int level, int64_t gpu) const {
  const NetworkLevel& l = levels[level];
  if (l.fabrics.empty()) return nullptr;
  const int64_t unit = gpu / (level == 0 ? 1 : Span(level - 1));
  for (const LevelFabric& f : l.fabrics) {
    if (f.Holds(unit)) return &f;
  }
  return nullptr;
}

double Topology::PortBandwidth(int level, int64_t gpu) const {
  const NetworkLevel& l = levels[level];
  if (l.kind == LinkKind::kFullMesh) {
    return static_cast<double>(std::max<int64_t>(1, l.group_size - 1)) * l.bandwidth_bytes_per_s;
  }
  const LevelFabric* f = FabricOf(level, gpu);
  return f != nullptr ? f->bandwidth_bytes_per_s : l.bandwidth_bytes_per_s;
}

double Topology::PortLatencySeconds(int level, int64_t gpu) const {
  const LevelFabric* f = FabricOf(level, gpu);
  return f != nullptr ? f->latency_s : levels[level].latency_s;
}

double Topology::PairBandwidth(int level, int64_t gpu_a, int64_t gpu_b) const {
  if (IsFullMesh(level)) return levels[level].bandwidth_bytes_per_s;
  return std::min(PortBandwidth(level, gpu_a), PortBandwidth(level, gpu_b));
}

bool Topology::HasMixedFabrics() const {
  for (const NetworkLevel& l : levels) {
    if (!l.fabrics.empty()) return true;
  }
  return false;
}

namespace {

// "KEY: must be at most MAX" when value (in the file's units) is above max or not finite.
Status AtLeast(const std::string& key, double value, double min) {
  if (value >= min) return Status::Ok();
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g", min);
  return Status::Invalid(key + ": must be at least " + buffer);
}

Status AtMost(const std::string& key, double value, double max) {
  if (std::isfinite(value) && value <= max) return Status::Ok();
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g", max);
  return Status::Invalid(key + ": must be at most " + buffer);
}

// A link's bandwidth_GBps and latency_us under `key` (a level or one of its fabrics): the
// bandwidth positive and within the bounds, the latency not negative and at most a second.
Status CheckLinkRates(const std::string& key, double bytes_per_s, double latency_s) {
  if (!(bytes_per_s > 0)) return Status::Invalid(key + ".bandwidth_GBps: must be positive");
  MESHPLAN_RETURN_IF_ERROR(AtMost(key + ".bandwidth_GBps", bytes_per_s / 1e9, kMaxBandwidthGBps));
  MESHPLAN_RETURN_IF_ERROR(AtLeast(key + ".bandwidth_GBps", bytes_per_s / 1e9, kMinBandwidthGBps));
  if (!(latency_s >= 0)) return Status::Invalid(key + ".latency_us: must not be negative");
  return AtMost(key + ".latency_us", latency_s * 1e6, kMaxLatencyUs);
}

// One kernel curve's ranges; keys are prefix.name[i] for points, prefix.backward_rate_ratio etc.
Status CheckKernelCurve(const std::string& prefix, const std::string& name,
                        const AttentionKernelCurve& c) {
  const std::string curve_key = prefix + "." + name;
  if (c.efficiency.empty())
    return Status::Invalid(curve_key + ": needs at least one [block_tokens, efficiency] point");
  for (size_t i = 0; i < c.efficiency.size(); ++i) {
    const auto& p = c.efficiency[i];
    const std::string key = curve_key + "[" + std::to_string(i) + "]";
    if (p.block_tokens <= 0) return Status::Invalid(key + ": block_tokens must be positive");
    if (!(p.efficiency > 0 && p.efficiency <= 1)) {
      return Status::Invalid(key + ": efficiency must be in (0, 1]");
    }
    if (i > 0 && p.block_tokens <= c.efficiency[i - 1].block_tokens) {
      return Status::Invalid(key + ": block_tokens must increase");
    }
  }
  if (!(c.backward_rate_ratio > 0 && c.backward_rate_ratio <= 100))
    return Status::Invalid(prefix + ".backward_rate_ratio: must be in (0, 100]");
  if (c.head_dim < 0 || c.head_dim > 65536)
    return Status::Invalid(prefix + ".head_dim: must be in 1..65536 (0: not stated)");
  if (!(c.pair_overhead_flops >= 0 && c.pair_overhead_flops <= 1e6))
    return Status::Invalid(prefix + ".pair_overhead_flops: must be in [0, 1e6]");
  if (!(c.ring_step_partial_passes >= 0 && c.ring_step_partial_passes <= 1000))
    return Status::Invalid(prefix + ".ring_step_partial_passes: must be in [0, 1000]");
  if (!(c.cut_row_extra_pairs >= 0 && c.cut_row_extra_pairs <= 1e6))
    return Status::Invalid(prefix + ".cut_row_extra_pairs: must be in [0, 1e6]");
  if (!(c.sliced_merge_passes >= 0 && c.sliced_merge_passes <= 1000))
    return Status::Invalid(prefix + ".sliced_merge_passes: must be in [0, 1000]");
  const KernelOccupancy& o = c.occupancy;
  const std::string occupancy = prefix + ".occupancy.";
  if (o.forward_tile_rows < 0 || o.forward_tile_rows > 65536)
    return Status::Invalid(occupancy + "forward_tile_rows: must be in 0..65536 (0: not modelled)");
  if (o.backward_tile_rows < 0 || o.backward_tile_rows > 65536)
    return Status::Invalid(occupancy + "backward_tile_rows: must be in 0..65536 (0: not modelled)");
  if (o.forward_ctas_per_sm < 1 || o.forward_ctas_per_sm > 64)
    return Status::Invalid(occupancy + "forward_ctas_per_sm: must be in 1..64");
  if (o.backward_ctas_per_sm < 1 || o.backward_ctas_per_sm > 64)
    return Status::Invalid(occupancy + "backward_ctas_per_sm: must be in 1..64");
  if (o.curve_batch_heads < 0 || o.curve_batch_heads > (int64_t{1} << 30))
    return Status::Invalid(occupancy + "curve_batch_heads: must be in 0..2^30 (0: full occupancy)");
  const std::pair<const char*, int64_t> tile_sides[] = {
      {"forward_tile_keys", o.forward_tile_keys},
      {"forward_causal_tile_keys", o.forward_causal_tile_keys},
      {"backward_tile_queries", o.backward_tile_queries},
      {"backward_causal_tile_queries", o.backward_causal_tile_queries}};
  for (const auto& [key, value] : tile_sides) {
    if (value < 0 || value > 65536)
      return Status::Invalid(occupancy + key + ": must be in 0..65536 (0: not stated)");
  }
  return Status::Ok();
}

}  // namespace

std::vector<std::string> Topology::PlausibilityNotes() const {
  std::vector<std::string> notes;
  if (gpu.ranks_per_device > 1) return notes;
  for (size_t i = 0; i < levels.size(); ++i) {
    const NetworkLevel& l = levels[i];
    const double gbps = l.bandwidth_bytes_per_s / 1e9;
    const double limit = i == 0 ? 900.0 : 100.0;
    if (gbps <= limit) continue;
    char buffer[400];
    std::snprintf(buffer, sizeof buffer,
                  i == 0 ? "level '%s': %.0f GB/s per GPU per direction is faster than NVLink 5 "
                           "(900 GB/s); bandwidth_GBps is gigabytes per second"
                         : "level '%s': %.0f GB/s per GPU per direction is faster than an 800 Gb/s "
                           "NIC (100 GB/s); bandwidth_GBps is gigabytes per second (a 400 Gb/s "
                           "NIC is 50)",
                  l.name.c_str(), gbps);
    notes.push_back(buffer);
  }
  for (size_t i = 0; i < levels.size(); ++i) {
    const double limit = i == 0 ? 900.0 : 100.0;
    for (const LevelFabric& f : levels[i].fabrics) {
      const double gbps = f.bandwidth_bytes_per_s / 1e9;
      if (gbps <= limit) continue;
      char buffer[400];
      std::snprintf(buffer, sizeof buffer,
                    "level '%s' fabric '%s': %.0f GB/s per GPU per direction is faster than %s; "
                    "bandwidth_GBps is gigabytes per second",
                    levels[i].name.c_str(), f.name.c_str(), gbps,
                    i == 0 ? "NVLink 5 (900 GB/s)" : "an 800 Gb/s NIC (100 GB/s)");
      notes.push_back(buffer);
    }
  }
  return notes;
}

Status GpuSpec::Validate() const {
  const GpuSpec& gpu = *this;
  if (gpu.model.empty()) return Status::Invalid("gpu.model: missing");
  if (!(gpu.memory_bytes > 0)) return Status::Invalid("gpu.memory_GB: must be positive");
  MESHPLAN_RETURN_IF_ERROR(AtMost("gpu.memory_GB", gpu.memory_bytes / 1e9, kMaxGpuMemoryGB));
  if (!(gpu.hbm_bytes_per_s > 0)) return Status::Invalid("gpu.hbm_GBps: must be positive");
  MESHPLAN_RETURN_IF_ERROR(AtMost("gpu.hbm_GBps", gpu.hbm_bytes_per_s / 1e9, kMaxBandwidthGBps));
  MESHPLAN_RETURN_IF_ERROR(AtLeast("gpu.hbm_GBps", gpu.hbm_bytes_per_s / 1e9, kMinBandwidthGBps));
  if (gpu.launch_overhead_s < 0)
    return Status::Invalid("gpu.launch_overhead_us: must not be negative");
  MESHPLAN_RETURN_IF_ERROR(
      AtMost("gpu.launch_overhead_us", gpu.launch_overhead_s * 1e6, kMaxLatencyUs));
  if (gpu.peak_tflops.empty()) return Status::Invalid("gpu.peak_tflops: needs at least one dtype");
  for (const auto& [dtype, tflops] : gpu.peak_tflops) {
    const std::string key = "gpu.peak_tflops." + std::string(DTypeName(dtype));
    if (!(tflops > 0)) return Status::Invalid(key + ": must be positive");
    MESHPLAN_RETURN_IF_ERROR(AtMost(key, tflops, kMaxPeakTflops));
    MESHPLAN_RETURN_IF_ERROR(AtLeast(key, tflops, kMinPeakTflops));
  }
  MESHPLAN_RETURN_IF_ERROR(
      CheckKernelCurve("gpu", "attention_efficiency",
                       {gpu.attention_efficiency, gpu.backward_rate_ratio, gpu.efficiency_head_dim,
                        gpu.pair_overhead_flops, gpu.ring_step_partial_passes,
                        gpu.cut_row_extra_pairs, gpu.sliced_merge_passes, gpu.occupancy, ""}));
  if (gpu.sm_count < 0 || gpu.sm_count > 100000)
    return Status::Invalid("gpu.sm_count: must be in 0..100000 (0: not stated)");
  if (!IsAttentionLibrary(gpu.attention_kernel)) {
    return Status::Invalid("gpu.attention_kernel: unknown attention library '" +
                           gpu.attention_kernel + "' (expected fa2, fa3, cudnn or own)");
  }
  for (const auto& [name, curve] : gpu.attention_kernels) {
    const std::string prefix = "gpu.attention_kernels." + name;
    if (!IsAttentionLibrary(name)) {
      return Status::Invalid(prefix +
                             ": unknown attention library (expected fa2, fa3, cudnn or own)");
    }
    MESHPLAN_RETURN_IF_ERROR(CheckKernelCurve(prefix, "efficiency", curve));
  }
  if (gpu.ranks_per_device < 1 || gpu.ranks_per_device > 4096) {
    return Status::Invalid("gpu.ranks_per_device: must be in 1..4096");
  }
  if (!(gpu.concurrent_kernels >= 1 && gpu.concurrent_kernels <= 4096)) {
    return Status::Invalid("gpu.concurrent_kernels: must be in [1, 4096]");
  }
  if (!(gpu.sharing_end_lag_s >= 0 && gpu.sharing_end_lag_s <= 10.0))
    return Status::Invalid("gpu.sharing_end_lag_us: must be in [0, 10000000] (10 s)");
  if (!(gpu.sharing_end_lag_fraction >= 0 && gpu.sharing_end_lag_fraction <= 1.0))
    return Status::Invalid("gpu.sharing_end_lag_fraction: must be in [0, 1] (of the run's time)");
  return Status::Ok();
}

namespace {

// [calibration]'s reference block: a time and its head dim together, or neither; a spread only
// beside them. Its draws: more than one with their range, and the range only beside them.
Status ValidateReference(const CalibrationRecord& c) {
  const bool time = c.reference_block_s != 0, dim = c.reference_head_dim != 0;
  if (time && !(std::isfinite(c.reference_block_s) && c.reference_block_s > 0 &&
                c.reference_block_s <= 1e6)) {
    return Status::Invalid("calibration.reference_block_us: must be in (0, 1e12] (1e6 s)");
  }
  if (dim && (c.reference_head_dim < 1 || c.reference_head_dim > 1024))
    return Status::Invalid("calibration.reference_head_dim: must be in 1..1024");
  if (time != dim) {
    return Status::Invalid(std::string("calibration.") +
                           (time ? "reference_head_dim" : "reference_block_us") +
                           ": missing (the reference block's time and head dim go together)");
  }
  if (c.draws < 0 || c.draws > kMaxCalibrationDraws) {
    return Status::Invalid("calibration.draws: must be in 1.." +
                           std::to_string(kMaxCalibrationDraws));
  }
  const bool range = c.draw_low != 0 || c.draw_high != 0;
  if (range && !(std::isfinite(c.draw_low) && std::isfinite(c.draw_high) && c.draw_low > 0 &&
                 c.draw_low <= 1 && c.draw_high >= 1 && c.draw_high <= 1e3)) {
    return Status::Invalid(
        "calibration.draw_range: must be [low, high] with 0 < low <= 1 <= high <= 1000 (the "
        "draws' predictions over the file's)");
  }
  if (range != (c.draws > 1)) {
    return Status::Invalid(range ? "calibration.draw_range: needs draws of 2 or more"
                                 : "calibration.draws: more than 1 needs draw_range (the range "
                                   "the draws' predictions took)");
  }
  if (c.speed_spread != -1) {
    if (!(std::isfinite(c.speed_spread) && c.speed_spread >= 0 && c.speed_spread <= 1e6))
      return Status::Invalid("calibration.speed_spread: must be in [0, 1e6]");
    if (!time) {
      return Status::Invalid(
          "calibration.speed_spread: needs reference_block_us and reference_head_dim (the spread "
          "is of the reference block's times)");
    }
  }
  return Status::Ok();
}

}  // namespace

Status Topology::Validate() const {
  MESHPLAN_RETURN_IF_ERROR(gpu.Validate());
  if (!(framework.step_overhead_s >= 0))
    return Status::Invalid("framework.step_overhead_us: must not be negative");
  MESHPLAN_RETURN_IF_ERROR(
      AtMost("framework.step_overhead_us", framework.step_overhead_s * 1e6, kMaxStepOverheadUs));
  if (calibration.recorded()) {
    if (!std::isfinite(calibration.load_average) || calibration.load_average > 1e6)
      return Status::Invalid("calibration.load_average: must be in [0, 1e6]");
    if (calibration.cores < 0 || calibration.cores > 1'000'000)
      return Status::Invalid("calibration.cores: must be in 1..1000000");
  }
  MESHPLAN_RETURN_IF_ERROR(ValidateReference(calibration));
  if (levels.empty()) return Status::Invalid("level: at least one network level is required");
  double total = 1;
  for (size_t i = 0; i < levels.size(); ++i) {
    const NetworkLevel& l = levels[i];
    const std::string key = "level[" + std::to_string(i) + "]";
    if (l.name.empty()) return Status::Invalid(key + ".name: missing");
    for (size_t j = 0; j < i; ++j) {
      if (levels[j].name == l.name)
        return Status::Invalid(key + ".name: '" + l.name + "' used twice");
    }
    if (l.group_size < 1) return Status::Invalid(key + ".group_size: must be at least 1");
    MESHPLAN_RETURN_IF_ERROR(CheckLinkRates(key, l.bandwidth_bytes_per_s, l.latency_s));
    if (!(l.oversubscription >= 1.0))
      return Status::Invalid(key + ".oversubscription: must be >= 1");
    MESHPLAN_RETURN_IF_ERROR(
        AtMost(key + ".oversubscription", l.oversubscription, kMaxOversubscription));
    if (l.kind == LinkKind::kTorus) {
      if (l.torus_dims.empty()) return Status::Invalid(key + ".dims: a torus level needs dims");
      // Checked: the dimensions come from the file, and their product may not fit in int64.
      int64_t product = 1;
      for (int64_t d : l.torus_dims) {
        if (d < 1) return Status::Invalid(key + ".dims: every dimension must be at least 1");
        const std::optional<int64_t> next = CheckedMultiply(product, d);
        if (!next) {
          return Status::Invalid(
              key + ".dims: product overflows 64 bits, so it differs from group_size " +
              std::to_string(l.group_size));
        }
        product = *next;
      }
      if (product != l.group_size) {
        return Status::Invalid(key + ".dims: product " + std::to_string(product) +
                               " differs from group_size " + std::to_string(l.group_size));
      }
    } else if (!l.torus_dims.empty()) {
      return Status::Invalid(key + ".dims: only a torus level takes dims");
    }
    if (l.kind == LinkKind::kFullMesh) {
      // Links join GPUs pairwise; between nodes every fabric here is switched.
      if (i != 0) {
        return Status::Invalid(key +
                               ".kind: a full-mesh level joins GPUs pairwise, so only the "
                               "innermost level (level[0]) may be one");
      }
      if (l.oversubscription != 1.0) {
        return Status::Invalid(key +
                               ".oversubscription: a full-mesh level's links are its "
                               "GPUs' own (no shared uplink): must be 1");
      }
    }
    total *= static_cast<double>(l.group_size);
    if (total > static_cast<double>(kMaxTopologyGpus)) {
      return Status::Invalid(key + ".group_size: more than 10 million GPUs in total");
    }
  }
  for (size_t i = 0; i < levels.size(); ++i) {
    MESHPLAN_RETURN_IF_ERROR(ValidateFabrics(static_cast<int>(i)));
  }
  if (levels[0].group_size % gpu.ranks_per_device != 0) {
    return Status::Invalid(
        "gpu.ranks_per_device: " + std::to_string(gpu.ranks_per_device) +
        " does not divide level[0].group_size " + std::to_string(levels[0].group_size) +
        " (the ranks of one device must sit in one group of the innermost level)");
  }
  return Status::Ok();
}

Status Topology::ValidateFabrics(int level) const {
  const NetworkLevel& l = levels[level];
  const std::string key = "level[" + std::to_string(level) + "].fabric";
  if (l.fabrics.empty()) return Status::Ok();
  if (HasHopRoutes(level) || IsFullMesh(level)) {
    return Status::Invalid(key + ": a " + std::string(LinkKindName(l.kind)) +
                           " level's links follow its coordinates; mixed fabrics are described "
                           "on switch and fat-tree levels");
  }
  // Units of this level: groups of the level below, over the whole cluster.
  const int64_t units = num_gpus() / (level == 0 ? 1 : Span(level - 1));
  struct Taken {
    int64_t first, last;
    size_t fabric;
  };
  std::vector<Taken> taken;  // every fabric's ranges so far
  for (size_t k = 0; k < l.fabrics.size(); ++k) {
    const LevelFabric& f = l.fabrics[k];
    const std::string fk = key + "[" + std::to_string(k) + "]";
    if (f.name.empty()) return Status::Invalid(fk + ".name: missing");
    for (size_t j = 0; j < k; ++j) {
      if (l.fabrics[j].name == f.name)
        return Status::Invalid(fk + ".name: '" + f.name + "' used twice");
    }
    if (f.units.empty()) return Status::Invalid(fk + ".units: needs at least one unit");
    for (const auto& [first, last] : f.units) {
      if (first < 0 || last < first || last >= units) {
        const std::string what =
            level == 0 ? "GPUs" : "groups of level '" + levels[level - 1].name + "'";
        return Status::Invalid(fk + ".units: " + std::to_string(first) +
                               (last == first ? "" : "-" + std::to_string(last)) +
                               " is outside 0.." + std::to_string(units - 1) + " (the cluster's " +
                               std::to_string(units) + " " + what + ")");
      }
      for (const Taken& t : taken) {
        if (first <= t.last && t.first <= last) {
          const std::string unit = std::to_string(std::max(first, t.first));
          return Status::Invalid(t.fabric == k
                                     ? fk + ".units: unit " + unit + " is listed twice"
                                     : fk + ".units: unit " + unit + " is in two fabrics ('" +
                                           l.fabrics[t.fabric].name + "' and '" + f.name + "')");
        }
      }
      taken.push_back({first, last, k});
    }
    MESHPLAN_RETURN_IF_ERROR(CheckLinkRates(fk, f.bandwidth_bytes_per_s, f.latency_s));
  }
  return Status::Ok();
}

Status Topology::SupportsDType(DType dtype) const {
  if (gpu.peak_tflops.count(dtype) != 0) return Status::Ok();
  return Status::Invalid(source + ": gpu.peak_tflops: no entry for " +
                         std::string(DTypeName(dtype)) + ", the workload's dtype");
}

}  // namespace meshplan
