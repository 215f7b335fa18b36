// Topology files: TOML -> Topology and back. The schema is documented in topologies/README.md.
//
// Reading is strict on purpose: a typo in a cluster file silently falling back to a default would
// make every prediction wrong without a hint. So unknown keys are errors, every value is
// type-checked, and every error is one line "SOURCE: KEY: REASON".
#include "core/cluster/topology_toml.h"

#include <toml++/toml.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <initializer_list>
#include <sstream>

#include "core/base/toml_util.h"
#include "core/cluster/gpu_catalog.h"

namespace meshplan {
namespace {

// Unit conversions between the file (GB, GB/s, us) and the model (bytes, bytes/s, seconds).
// The writer inverts exactly these functions, so they are the single definition of the units.
double GbToBytes(double gb) { return gb * 1e9; }
double UsToSeconds(double us) { return us / 1e6; }
double Identity(double x) { return x; }

// Error construction and typed access, all producing "source: key: reason".
class Reader {
 public:
  explicit Reader(const std::string& source) : source_(source) {}
  const std::string& source() const { return source_; }

  Status Fail(const std::string& key, const std::string& reason) const {
    return Status::Invalid(source_ + ": " + key + ": " + reason);
  }

  // Every key of `table` must be in `allowed`; `prefix` is the table's own key ("" at top level).
  Status CheckKeys(const toml::table& table, const std::string& prefix,
                   std::initializer_list<std::string_view> allowed) const {
    return CheckTomlKeys(table, prefix, allowed, source_);
  }

  // Finds `name` in `table`. Returns nullptr when absent; absent and required is an error.
  Result<const toml::node*> Find(const toml::table& table, const std::string& prefix,
                                 std::string_view name, bool required) const {
    const toml::node* node = table.get(name);
    if (node == nullptr && required)
      return Fail(Join(prefix, std::string(name)), "missing required key");
    return node;
  }

  // A finite number; integers are accepted where floats are expected.
  Status Number(const toml::node& node, const std::string& key, double* out) const {
    double value = 0;
    if (const auto* i = node.as_integer()) {
      value = static_cast<double>(i->get());
    } else if (const auto* f = node.as_floating_point()) {
      value = f->get();
    } else {
      return Fail(key, "expected a number, got " + TomlTypeName(node));
    }
    if (!std::isfinite(value)) return Fail(key, "must be a finite number");
    // -0.0 is stored as 0: the writer would print "-0", which reads back as the integer 0, so the
    // file would not round-trip (the topology fuzz target found `latency_us = -0.0`).
    *out = value == 0 ? 0.0 : value;
    return Status::Ok();
  }

  Status Integer(const toml::node& node, const std::string& key, int64_t* out) const {
    const auto* i = node.as_integer();
    if (i == nullptr) return Fail(key, "expected an integer, got " + TomlTypeName(node));
    *out = i->get();
    return Status::Ok();
  }

  Status Bool(const toml::node& node, const std::string& key, bool* out) const {
    const auto* b = node.as_boolean();
    if (b == nullptr) return Fail(key, "expected true or false, got " + TomlTypeName(node));
    *out = b->get();
    return Status::Ok();
  }

  Status String(const toml::node& node, const std::string& key, std::string* out) const {
    const auto* s = node.as_string();
    if (s == nullptr) return Fail(key, "expected a string, got " + TomlTypeName(node));
    *out = s->get();
    return Status::Ok();
  }

  // Convenience: optional or required scalar members of a table. Absent optional keys leave *out.
  Status NumberAt(const toml::table& t, const std::string& prefix, std::string_view name,
                  bool required, double* out) const {
    auto node = Find(t, prefix, name, required);
    if (!node.ok()) return node.status();
    return *node == nullptr ? Status::Ok() : Number(**node, Join(prefix, std::string(name)), out);
  }
  Status IntegerAt(const toml::table& t, const std::string& prefix, std::string_view name,
                   bool required, int64_t* out) const {
    auto node = Find(t, prefix, name, required);
    if (!node.ok()) return node.status();
    return *node == nullptr ? Status::Ok() : Integer(**node, Join(prefix, std::string(name)), out);
  }
  Status BoolAt(const toml::table& t, const std::string& prefix, std::string_view name,
                bool required, bool* out) const {
    auto node = Find(t, prefix, name, required);
    if (!node.ok()) return node.status();
    return *node == nullptr ? Status::Ok() : Bool(**node, Join(prefix, std::string(name)), out);
  }
  Status StringAt(const toml::table& t, const std::string& prefix, std::string_view name,
                  bool required, std::string* out) const {
    auto node = Find(t, prefix, name, required);
    if (!node.ok()) return node.status();
    return *node == nullptr ? Status::Ok() : String(**node, Join(prefix, std::string(name)), out);
  }

  static std::string Join(const std::string& prefix, const std::string& name) {
    return prefix.empty() ? name : prefix + "." + name;
  }

 private:
  const std::string& source_;
};

// An array of [block_tokens, efficiency] pairs at `key`.
Status ReadCurve(const Reader& r, const toml::node& node, const std::string& key,
                 std::vector<EfficiencyPoint>* out) {
  const toml::array* points = node.as_array();
  if (points == nullptr) {
    return r.Fail(
        key, "expected an array of [block_tokens, efficiency] pairs, got " + TomlTypeName(node));
  }
  for (size_t i = 0; i < points->size(); ++i) {
    const std::string point_key = key + "[" + std::to_string(i) + "]";
    const toml::array* pair = (*points)[i].as_array();
    if (pair == nullptr || pair->size() != 2) {
      return r.Fail(point_key, "expected a pair [block_tokens, efficiency]");
    }
    EfficiencyPoint point;
    MESHPLAN_RETURN_IF_ERROR(
        r.Integer((*pair)[0], point_key + ".block_tokens", &point.block_tokens));
    MESHPLAN_RETURN_IF_ERROR(r.Number((*pair)[1], point_key + ".efficiency", &point.efficiency));
    out->push_back(point);
  }
  return Status::Ok();
}

// `occupancy = { forward_tile_rows = 128, ... }` (KernelOccupancy) in `table` at `prefix`; absent:
// left as it is (not modelled).
Status ReadOccupancy(const Reader& r, const toml::table& table, const std::string& prefix,
                     KernelOccupancy* out) {
  auto node = r.Find(table, prefix, "occupancy", false);
  if (!node.ok()) return node.status();
  if (*node == nullptr) return Status::Ok();
  const std::string key = Reader::Join(prefix, "occupancy");
  const toml::table* t = (*node)->as_table();
  if (t == nullptr) return r.Fail(key, "expected a table, got " + TomlTypeName(**node));
  MESHPLAN_RETURN_IF_ERROR(r.CheckKeys(
      *t, key,
      {"forward_tile_rows", "forward_ctas_per_sm", "backward_tile_rows", "backward_ctas_per_sm",
       "curve_batch_heads", "forward_tile_keys", "forward_causal_tile_keys",
       "backward_tile_queries", "backward_causal_tile_queries"}));
  MESHPLAN_RETURN_IF_ERROR(
      r.IntegerAt(*t, key, "forward_tile_rows", false, &out->forward_tile_rows));
  MESHPLAN_RETURN_IF_ERROR(
      r.IntegerAt(*t, key, "forward_ctas_per_sm", false, &out->forward_ctas_per_sm));
  MESHPLAN_RETURN_IF_ERROR(
      r.IntegerAt(*t, key, "backward_tile_rows", false, &out->backward_tile_rows));
  MESHPLAN_RETURN_IF_ERROR(
      r.IntegerAt(*t, key, "backward_ctas_per_sm", false, &out->backward_ctas_per_sm));
  MESHPLAN_RETURN_IF_ERROR(
      r.IntegerAt(*t, key, "curve_batch_heads", false, &out->curve_batch_heads));
  MESHPLAN_RETURN_IF_ERROR(
      r.IntegerAt(*t, key, "forward_tile_keys", false, &out->forward_tile_keys));
  MESHPLAN_RETURN_IF_ERROR(
      r.IntegerAt(*t, key, "forward_causal_tile_keys", false, &out->forward_causal_tile_keys));
  MESHPLAN_RETURN_IF_ERROR(
      r.IntegerAt(*t, key, "backward_tile_queries", false, &out->backward_tile_queries));
  return r.IntegerAt(*t, key, "backward_causal_tile_queries", false,
                     &out->backward_causal_tile_queries);
}

// The kernel curves: [gpu.attention_kernels.NAME] tables, and the [gpu] fields
// (attention_efficiency with backward_rate_ratio, efficiency_head_dim and pair_overhead_flops) as
// the curve of gpu.attention_kernel. That library's curve becomes the active one.
Status ReadAttentionKernels(const Reader& r, const toml::table& t, GpuSpec* gpu) {
  const std::string p = "gpu";
  MESHPLAN_RETURN_IF_ERROR(r.StringAt(t, p, "attention_kernel", false, &gpu->attention_kernel));
  if (!IsAttentionLibrary(gpu->attention_kernel)) {
    return r.Fail("gpu.attention_kernel", "unknown attention library '" + gpu->attention_kernel +
                                              "' (expected fa2, fa3, cudnn or own)");
  }
  auto tables = r.Find(t, p, "attention_kernels", false);
  if (!tables.ok()) return tables.status();
  if (*tables != nullptr) {
    const toml::table* libraries = (*tables)->as_table();
    if (libraries == nullptr) {
      return r.Fail("gpu.attention_kernels",
                    "expected tables [gpu.attention_kernels.NAME], got " + TomlTypeName(**tables));
    }
    for (auto&& [key, node] : *libraries) {
      const std::string name(key.str());
      const std::string prefix = "gpu.attention_kernels." + name;
      if (!IsAttentionLibrary(name))
        return r.Fail(prefix, "unknown attention library (expected fa2, fa3, cudnn or own)");
      const toml::table* table = node.as_table();
      if (table == nullptr) return r.Fail(prefix, "expected a table, got " + TomlTypeName(node));
      MESHPLAN_RETURN_IF_ERROR(
          r.CheckKeys(*table, prefix,
                      {"efficiency", "backward_rate_ratio", "head_dim", "pair_overhead_flops",
                       "ring_step_partial_passes", "cut_row_extra_pairs", "sliced_merge_passes",
                       "occupancy", "source"}));
      AttentionKernelCurve curve;
      auto points = r.Find(*table, prefix, "efficiency", true);
      if (!points.ok()) return points.status();
      MESHPLAN_RETURN_IF_ERROR(ReadCurve(r, **points, prefix + ".efficiency", &curve.efficiency));
      MESHPLAN_RETURN_IF_ERROR(
          r.NumberAt(*table, prefix, "backward_rate_ratio", false, &curve.backward_rate_ratio));
      MESHPLAN_RETURN_IF_ERROR(r.IntegerAt(*table, prefix, "head_dim", false, &curve.head_dim));
      MESHPLAN_RETURN_IF_ERROR(
          r.NumberAt(*table, prefix, "pair_overhead_flops", false, &curve.pair_overhead_flops));
      MESHPLAN_RETURN_IF_ERROR(r.NumberAt(*table, prefix, "ring_step_partial_passes", false,
                                          &curve.ring_step_partial_passes));
      MESHPLAN_RETURN_IF_ERROR(
          r.NumberAt(*table, prefix, "cut_row_extra_pairs", false, &curve.cut_row_extra_pairs));
      MESHPLAN_RETURN_IF_ERROR(
          r.NumberAt(*table, prefix, "sliced_merge_passes", false, &curve.sliced_merge_passes));
      MESHPLAN_RETURN_IF_ERROR(ReadOccupancy(r, *table, prefix, &curve.occupancy));
      MESHPLAN_RETURN_IF_ERROR(r.StringAt(*table, prefix, "source", true, &curve.source));
      gpu->attention_kernels[name] = std::move(curve);
    }
  }
  const std::string& active = gpu->attention_kernel;
  auto legacy = r.Find(t, p, "attention_efficiency", false);
  if (!legacy.ok()) return legacy.status();
  if (*legacy == nullptr) {
    for (std::string_view key :
         {"backward_rate_ratio", "efficiency_head_dim", "pair_overhead_flops",
          "ring_step_partial_passes", "cut_row_extra_pairs", "sliced_merge_passes", "occupancy"}) {
      if (t.contains(key)) {
        return r.Fail("gpu." + std::string(key),
                      "describes gpu.attention_efficiency, which is absent (give it in "
                      "[gpu.attention_kernels." +
                          active + "])");
      }
    }
    if (gpu->attention_kernels.count(active) == 0) {
      return r.Fail(
          gpu->attention_kernels.empty() ? "gpu.attention_efficiency" : "gpu.attention_kernel",
          gpu->attention_kernels.empty()
              ? std::string("missing required key (or [gpu.attention_kernels.NAME] tables)")
              : "no curve for '" + active + "' (give [gpu.attention_kernels." + active +
                    "] or gpu.attention_efficiency)");
    }
  } else {
    if (gpu->attention_kernels.count(active) != 0) {
      return r.Fail("gpu.attention_efficiency", "library '" + active +
                                                    "' (gpu.attention_kernel) also has a curve in "
                                                    "[gpu.attention_kernels." +
                                                    active + "]: give one of them");
    }
    AttentionKernelCurve curve;
    MESHPLAN_RETURN_IF_ERROR(ReadCurve(r, **legacy, "gpu.attention_efficiency", &curve.efficiency));
    MESHPLAN_RETURN_IF_ERROR(
        r.NumberAt(t, p, "backward_rate_ratio", false, &curve.backward_rate_ratio));
    MESHPLAN_RETURN_IF_ERROR(r.IntegerAt(t, p, "efficiency_head_dim", false, &curve.head_dim));
    MESHPLAN_RETURN_IF_ERROR(
        r.NumberAt(t, p, "pair_overhead_flops", false, &curve.pair_overhead_flops));
    MESHPLAN_RETURN_IF_ERROR(
        r.NumberAt(t, p, "ring_step_partial_passes", false, &curve.ring_step_partial_passes));
    MESHPLAN_RETURN_IF_ERROR(
        r.NumberAt(t, p, "cut_row_extra_pairs", false, &curve.cut_row_extra_pairs));
    MESHPLAN_RETURN_IF_ERROR(
        r.NumberAt(t, p, "sliced_merge_passes", false, &curve.sliced_merge_passes));
    MESHPLAN_RETURN_IF_ERROR(ReadOccupancy(r, t, p, &curve.occupancy));
    gpu->attention_kernels[active] = std::move(curve);
  }
  gpu->UseCurve(gpu->attention_kernels[active]);
  return Status::Ok();
}

// The keys of each table, allowed and required.
constexpr std::string_view kRootKeys[] = {"name",  "description", "provenance", "gpu",
                                          "level", "framework",   "calibration"};
constexpr std::string_view kRootRequired[] = {"name", "gpu", "level"};
constexpr std::string_view kGpuKeys[] = {"catalog",
                                         "model",
                                         "memory_GB",
                                         "hbm_GBps",
                                         "launch_overhead_us",
                                         "peak_tflops",
                                         "gemm_efficiency",
                                         "step_kernel_rate_fraction",
                                         "attention_efficiency",
                                         "backward_rate_ratio",
                                         "efficiency_head_dim",
                                         "pair_overhead_flops",
                                         "ring_step_partial_passes",
                                         "attention_kernel",
                                         "attention_kernels",
                                         "cut_row_extra_pairs",
                                         "sliced_merge_passes",
                                         "occupancy",
                                         "sm_count",
                                         "ranks_per_device",
                                         "concurrent_kernels",
                                         "sharing",
                                         "sharing_end_lag_us",
                                         "sharing_end_lag_fraction",
                                         "copies_take_compute"};
constexpr std::string_view kGpuRequired[] = {"model", "memory_GB", "hbm_GBps", "peak_tflops"};
constexpr std::string_view kLevelKeys[] = {"name",           "kind",       "group_size",
                                           "bandwidth_GBps", "latency_us", "oversubscription",
                                           "dims",           "fabric"};
constexpr std::string_view kFabricKeys[] = {"name", "units", "bandwidth_GBps", "latency_us"};
constexpr std::string_view kLevelRequired[] = {"name", "kind", "group_size", "bandwidth_GBps",
                                               "latency_us"};

// Every missing and unknown key of the root, [gpu] and each [[level]] (tables of the wrong type
// are left to the reads, which name them).
std::vector<std::string> KeyProblems(const toml::table& root) {
  std::vector<std::string> problems;
  CollectKeyProblems(root, "", kRootKeys, kRootRequired, &problems);
  if (const toml::table* gpu = root["gpu"].as_table())
    CollectKeyProblems(*gpu, "gpu", kGpuKeys, kGpuRequired, &problems);
  if (const toml::array* levels = root["level"].as_array()) {
    for (size_t i = 0; i < levels->size(); ++i) {
      if (const toml::table* level = (*levels)[i].as_table()) {
        CollectKeyProblems(*level, "level[" + std::to_string(i) + "]", kLevelKeys, kLevelRequired,
                           &problems);
      }
    }
  }
  return problems;
}

// gemm_efficiency = { dtype = fraction, ... }: each dtype one peak_tflops states, each fraction in
// (0, 1].
Status ReadGemmEfficiency(const Reader& r, const toml::table& t, GpuSpec* gpu) {
  auto node = r.Find(t, "gpu", "gemm_efficiency", false);
  if (!node.ok()) return node.status();
  if (*node == nullptr) return Status::Ok();
  const toml::table* table = (*node)->as_table();
  if (table == nullptr) {
    return r.Fail("gpu.gemm_efficiency",
                  "expected a table of dtype = fraction of peak, got " + TomlTypeName(**node));
  }
  for (auto&& entry : *table) {
    const std::string full = "gpu.gemm_efficiency." + std::string(entry.first.str());
    auto dtype = ParseDType(entry.first.str());
    if (!dtype.ok()) return r.Fail(full, dtype.status().message());
    if (gpu->peak_tflops.count(*dtype) == 0)
      return r.Fail(full, "peak_tflops states no " + std::string(DTypeName(*dtype)) + " rate");
    double fraction = 0;
    MESHPLAN_RETURN_IF_ERROR(r.Number(entry.second, full, &fraction));
    if (!(fraction > 0 && fraction <= 1)) return r.Fail(full, "must be in (0, 1]");
    gpu->gemm_efficiency[*dtype] = fraction;
  }
  return Status::Ok();
}

Status ReadGpu(const Reader& r, const toml::table& t, GpuSpec* gpu) {
  const std::string p = "gpu";
  if (t.contains("masked_block_rate_ratio")) {
    // Written by calibrate before 2026-11-26: one rate ratio for a cut block's whole area.
    return r.Fail("gpu.masked_block_rate_ratio",
                  "no longer read: cuts are modelled per cut row (cut_row_extra_pairs); re-run "
                  "`meshplan calibrate` "
                  "(topologies/README.md)");
  }
  MESHPLAN_RETURN_IF_ERROR(CheckTomlKeys(t, p, kGpuKeys, r.source()));
  MESHPLAN_RETURN_IF_ERROR(r.StringAt(t, p, "catalog", false, &gpu->catalog));
  MESHPLAN_RETURN_IF_ERROR(r.StringAt(t, p, "model", true, &gpu->model));
  MESHPLAN_RETURN_IF_ERROR(r.IntegerAt(t, p, "sm_count", false, &gpu->sm_count));
  double memory_gb = 0, hbm_gbps = 0, launch_us = 0;
  MESHPLAN_RETURN_IF_ERROR(r.NumberAt(t, p, "memory_GB", true, &memory_gb));
  MESHPLAN_RETURN_IF_ERROR(r.NumberAt(t, p, "hbm_GBps", true, &hbm_gbps));
  MESHPLAN_RETURN_IF_ERROR(r.NumberAt(t, p, "launch_overhead_us", false, &launch_us));
  gpu->memory_bytes = GbToBytes(memory_gb);
  gpu->hbm_bytes_per_s = GbToBytes(hbm_gbps);
  gpu->launch_overhead_s = UsToSeconds(launch_us);
  MESHPLAN_RETURN_IF_ERROR(r.IntegerAt(t, p, "ranks_per_device", false, &gpu->ranks_per_device));
  MESHPLAN_RETURN_IF_ERROR(r.NumberAt(t, p, "concurrent_kernels", false, &gpu->concurrent_kernels));
  std::string sharing(DeviceSharingName(gpu->sharing));
  MESHPLAN_RETURN_IF_ERROR(r.StringAt(t, p, "sharing", false, &sharing));
  auto parsed_sharing = ParseDeviceSharing(sharing);
  if (!parsed_sharing.ok()) return r.Fail("gpu.sharing", parsed_sharing.status().message());
  gpu->sharing = *parsed_sharing;
  MESHPLAN_RETURN_IF_ERROR(r.BoolAt(t, p, "copies_take_compute", false, &gpu->copies_take_compute));
  MESHPLAN_RETURN_IF_ERROR(
      r.NumberAt(t, p, "step_kernel_rate_fraction", false, &gpu->step_kernel_rate_fraction));
  if (!(gpu->step_kernel_rate_fraction > 0 && gpu->step_kernel_rate_fraction <= 1))
    return r.Fail("gpu.step_kernel_rate_fraction", "must be in (0, 1]");
  double lag_us = gpu->sharing_end_lag_s * 1e6;
  MESHPLAN_RETURN_IF_ERROR(r.NumberAt(t, p, "sharing_end_lag_us", false, &lag_us));
  gpu->sharing_end_lag_s = UsToSeconds(lag_us);
  MESHPLAN_RETURN_IF_ERROR(
      r.NumberAt(t, p, "sharing_end_lag_fraction", false, &gpu->sharing_end_lag_fraction));

  auto peak = r.Find(t, p, "peak_tflops", true);
  if (!peak.ok()) return peak.status();
  const toml::table* peak_table = (*peak)->as_table();
  if (peak_table == nullptr) {
    return r.Fail("gpu.peak_tflops",
                  "expected a table of dtype = TFLOP/s, got " + TomlTypeName(**peak));
  }
  for (auto&& [key, node] : *peak_table) {
    const std::string name(key.str());
    const std::string full = "gpu.peak_tflops." + name;
    auto dtype = ParseDType(name);
    if (!dtype.ok()) return r.Fail(full, dtype.status().message());
    if (gpu->peak_tflops.count(*dtype)) return r.Fail(full, "dtype given twice");
    double tflops = 0;
    MESHPLAN_RETURN_IF_ERROR(r.Number(node, full, &tflops));
    gpu->peak_tflops[*dtype] = tflops;
  }
  MESHPLAN_RETURN_IF_ERROR(ReadGemmEfficiency(r, t, gpu));

  return ReadAttentionKernels(r, t, gpu);
}

// `provenance = ["...", ...]`: optional, strings only, at most kMaxProvenanceLines.
constexpr size_t kMaxProvenanceLines = 1000;
Status ReadProvenance(const Reader& r, const toml::table& root, std::vector<std::string>* out) {
  auto node = r.Find(root, "", "provenance", false);
  if (!node.ok()) return node.status();
  if (*node == nullptr) return Status::Ok();
  const toml::array* lines = (*node)->as_array();
  if (lines == nullptr)
    return r.Fail("provenance", "expected an array of strings, got " + TomlTypeName(**node));
  if (lines->size() > kMaxProvenanceLines)
    return r.Fail("provenance", "at most " + std::to_string(kMaxProvenanceLines) + " lines");
  for (size_t i = 0; i < lines->size(); ++i) {
    const auto* line = (*lines)[i].as_string();
    if (line == nullptr) {
      return r.Fail("provenance[" + std::to_string(i) + "]",
                    "expected a string, got " + TomlTypeName((*lines)[i]));
    }
    out->push_back(line->get());
  }
  return Status::Ok();
}

// [calibration]: every key optional, load_average >= 0 when given.
Status ReadCalibration(const Reader& r, const toml::table& root, CalibrationRecord* out) {
  auto node = r.Find(root, "", "calibration", false);
  if (!node.ok()) return node.status();
  if (*node == nullptr) return Status::Ok();
  const toml::table* table = (*node)->as_table();
  if (table == nullptr)
    return r.Fail("calibration", "expected a table ([calibration]), got " + TomlTypeName(**node));
  const std::string p = "calibration";
  MESHPLAN_RETURN_IF_ERROR(r.CheckKeys(
      *table, p,
      {"load_average", "cores", "kernel_median_error", "kernel_max_error", "other_processes_cores",
       "reference_block_us", "reference_head_dim", "speed_spread", "draws", "draw_range"}));
  MESHPLAN_RETURN_IF_ERROR(r.NumberAt(*table, p, "load_average", false, &out->load_average));
  if (table->contains("load_average") && out->load_average < 0)
    return r.Fail("calibration.load_average", "must not be negative");
  MESHPLAN_RETURN_IF_ERROR(r.IntegerAt(*table, p, "cores", false, &out->cores));
  MESHPLAN_RETURN_IF_ERROR(
      r.NumberAt(*table, p, "kernel_median_error", false, &out->kernel_median_error));
  MESHPLAN_RETURN_IF_ERROR(
      r.NumberAt(*table, p, "kernel_max_error", false, &out->kernel_max_error));
  MESHPLAN_RETURN_IF_ERROR(
      r.NumberAt(*table, p, "other_processes_cores", false, &out->other_processes_cores));
  if (table->contains("other_processes_cores") && out->other_processes_cores < 0)
    return r.Fail("calibration.other_processes_cores", "must not be negative");
  double reference_us = 0;
  MESHPLAN_RETURN_IF_ERROR(r.NumberAt(*table, p, "reference_block_us", false, &reference_us));
  if (table->contains("reference_block_us") && !(reference_us > 0))
    return r.Fail("calibration.reference_block_us", "must be positive");
  out->reference_block_s = reference_us * 1e-6;
  MESHPLAN_RETURN_IF_ERROR(
      r.IntegerAt(*table, p, "reference_head_dim", false, &out->reference_head_dim));
  if (table->contains("reference_head_dim") && out->reference_head_dim < 1)
    return r.Fail("calibration.reference_head_dim", "must be positive");
  MESHPLAN_RETURN_IF_ERROR(r.NumberAt(*table, p, "speed_spread", false, &out->speed_spread));
  if (table->contains("speed_spread") && out->speed_spread < 0)
    return r.Fail("calibration.speed_spread", "must not be negative");
  MESHPLAN_RETURN_IF_ERROR(r.IntegerAt(*table, p, "draws", false, &out->draws));
  if (table->contains("draws") && out->draws < 1)
    return r.Fail("calibration.draws", "must be at least 1");
  if (const toml::node* range = table->get("draw_range")) {
    const toml::array* pair = range->as_array();
    if (pair == nullptr || pair->size() != 2)
      return r.Fail("calibration.draw_range", "expected a pair [low, high]");
    MESHPLAN_RETURN_IF_ERROR(r.Number((*pair)[0], "calibration.draw_range[0]", &out->draw_low));
    MESHPLAN_RETURN_IF_ERROR(r.Number((*pair)[1], "calibration.draw_range[1]", &out->draw_high));
  }
  return Status::Ok();
}

// units = [4, "8-11"]: unit indices, each an integer or an inclusive "first-last" range.
Status ReadFabricUnits(const Reader& r, const toml::node& node, const std::string& key,
                       LevelFabric* fabric) {
  const toml::array* array = node.as_array();
  if (array == nullptr) {
    return r.Fail(key,
                  "expected an array of unit indices (integers or \"first-last\" ranges), got " +
                      TomlTypeName(node));
  }
  for (size_t i = 0; i < array->size(); ++i) {
    const toml::node& entry = (*array)[i];
    const std::string ek = key + "[" + std::to_string(i) + "]";
    if (const auto* n = entry.as_integer()) {
      fabric->units.emplace_back(n->get(), n->get());
      continue;
    }
    const auto* text = entry.as_string();
    if (text == nullptr) {
      return r.Fail(ek,
                    "expected a unit index or a \"first-last\" range, got " + TomlTypeName(entry));
    }
    const std::string& range = text->get();
    const size_t dash = range.find('-');
    int64_t first = -1, last = -1;
    const char* begin = range.data();
    const char* end = range.data() + range.size();
    bool ok = dash != std::string::npos && dash > 0;
    if (ok) {
      auto a = std::from_chars(begin, begin + dash, first);
      auto b = std::from_chars(begin + dash + 1, end, last);
      ok = a.ec == std::errc() && a.ptr == begin + dash && b.ec == std::errc() && b.ptr == end;
    }
    if (!ok) return r.Fail(ek, "'" + range + "' is not a range like \"4-7\"");
    fabric->units.emplace_back(first, last);
  }
  return Status::Ok();
}

// [[level.fabric]] tables: units of the level whose links differ (LevelFabric).
Status ReadFabrics(const Reader& r, const toml::node& node, const std::string& p,
                   NetworkLevel* level) {
  const toml::array* array = node.as_array();
  if (array == nullptr) {
    return r.Fail(p + ".fabric",
                  "expected an array of tables ([[level.fabric]]), got " + TomlTypeName(node));
  }
  for (size_t i = 0; i < array->size(); ++i) {
    const std::string key = p + ".fabric[" + std::to_string(i) + "]";
    const toml::table* t = (*array)[i].as_table();
    if (t == nullptr) return r.Fail(key, "expected a table, got " + TomlTypeName((*array)[i]));
    MESHPLAN_RETURN_IF_ERROR(CheckTomlKeys(*t, key, kFabricKeys, r.source()));
    LevelFabric fabric;
    MESHPLAN_RETURN_IF_ERROR(r.StringAt(*t, key, "name", true, &fabric.name));
    auto units = r.Find(*t, key, "units", true);
    if (!units.ok()) return units.status();
    MESHPLAN_RETURN_IF_ERROR(ReadFabricUnits(r, **units, key + ".units", &fabric));
    double bandwidth_gbps = 0;
    MESHPLAN_RETURN_IF_ERROR(r.NumberAt(*t, key, "bandwidth_GBps", true, &bandwidth_gbps));
    fabric.bandwidth_bytes_per_s = GbToBytes(bandwidth_gbps);
    // The level's latency unless the fabric states its own.
    double latency_us = level->latency_s * 1e6;
    if (t->contains("latency_us")) {
      MESHPLAN_RETURN_IF_ERROR(r.NumberAt(*t, key, "latency_us", true, &latency_us));
      fabric.latency_s = UsToSeconds(latency_us);
    } else {
      fabric.latency_s = level->latency_s;
    }
    level->fabrics.push_back(std::move(fabric));
  }
  return Status::Ok();
}

Status ReadLevel(const Reader& r, const toml::table& t, const std::string& p, NetworkLevel* level) {
  MESHPLAN_RETURN_IF_ERROR(CheckTomlKeys(t, p, kLevelKeys, r.source()));
  MESHPLAN_RETURN_IF_ERROR(r.StringAt(t, p, "name", true, &level->name));
  std::string kind;
  MESHPLAN_RETURN_IF_ERROR(r.StringAt(t, p, "kind", true, &kind));
  auto parsed = ParseLinkKind(kind);
  if (!parsed.ok()) return r.Fail(p + ".kind", parsed.status().message());
  level->kind = *parsed;
  MESHPLAN_RETURN_IF_ERROR(r.IntegerAt(t, p, "group_size", true, &level->group_size));
  double bandwidth_gbps = 0, latency_us = 0;
  MESHPLAN_RETURN_IF_ERROR(r.NumberAt(t, p, "bandwidth_GBps", true, &bandwidth_gbps));
  MESHPLAN_RETURN_IF_ERROR(r.NumberAt(t, p, "latency_us", true, &latency_us));
  level->bandwidth_bytes_per_s = GbToBytes(bandwidth_gbps);
  level->latency_s = UsToSeconds(latency_us);
  MESHPLAN_RETURN_IF_ERROR(r.NumberAt(t, p, "oversubscription", false, &level->oversubscription));
  auto dims = r.Find(t, p, "dims", false);
  if (!dims.ok()) return dims.status();
  if (*dims != nullptr) {
    const toml::array* array = (*dims)->as_array();
    if (array == nullptr)
      return r.Fail(p + ".dims", "expected an array of integers, got " + TomlTypeName(**dims));
    for (size_t i = 0; i < array->size(); ++i) {
      int64_t d = 0;
      MESHPLAN_RETURN_IF_ERROR(r.Integer((*array)[i], p + ".dims[" + std::to_string(i) + "]", &d));
      level->torus_dims.push_back(d);
    }
  }
  auto fabrics = r.Find(t, p, "fabric", false);
  if (!fabrics.ok()) return fabrics.status();
  if (*fabrics != nullptr) MESHPLAN_RETURN_IF_ERROR(ReadFabrics(r, **fabrics, p, level));
  return Status::Ok();
}

// Lays `over` on `base`: tables merge key by key (so [gpu.attention_kernels.fa3] in a cluster
// file overrides that library's keys, not the whole table), everything else replaces.
void LayOver(toml::table& base, const toml::table& over) {
  for (auto&& entry : over) {
    // Not a structured binding: clang before 16 cannot capture one in the lambda below.
    const toml::key& key = entry.first;
    const toml::node& node = entry.second;
    toml::table* base_table = base[key].as_table();
    if (base_table != nullptr && node.is_table()) {
      LayOver(*base_table, *node.as_table());
      continue;
    }
    node.visit([&](const auto& value) { base.insert_or_assign(key, value); });
  }
}

constexpr std::string_view kGpuCatalogRootKeys[] = {"name", "description", "gpu"};

// The GPU catalog entry a cluster file names (`gpu = "NAME"`, or `catalog` in its [gpu] table):
// the entry's [gpu] table, checked on its own so that its errors name its file.
Result<toml::table> GpuCatalogTable(const std::string& value, const std::string& source) {
  const Reader r(source);
  std::string entry_source;
  std::string text;
  if (IsGpuCatalogName(value)) {
    auto shipped = ShippedGpuToml(value);
    if (!shipped.ok()) return r.Fail("gpu.catalog", shipped.status().message());
    entry_source = "topologies/gpus/" + value + ".toml";
    text = std::string(*shipped);
  } else {
    entry_source = GpuCatalogPath(value, source);
    auto read = ReadTextFile(entry_source);
    if (!read.ok()) return r.Fail("gpu.catalog", read.status().message());
    text = std::move(read).value();
  }
  MESHPLAN_ASSIGN_OR_RETURN(toml::table entry, ParseTomlDocument(text, entry_source));
  MESHPLAN_RETURN_IF_ERROR(CheckTomlKeys(entry, "", kGpuCatalogRootKeys, entry_source));
  const Reader entry_reader(entry_source);
  toml::table* gpu = entry["gpu"].as_table();
  if (gpu == nullptr) {
    return entry_reader.Fail("gpu", entry.contains("gpu") ? "expected a table ([gpu]), got " +
                                                                TomlTypeName(*entry.get("gpu"))
                                                          : "missing required key");
  }
  if (gpu->contains("catalog"))
    return entry_reader.Fail("gpu.catalog", "a GPU catalog entry cannot name another");
  std::vector<std::string> problems;
  CollectKeyProblems(*gpu, "gpu", kGpuKeys, kGpuRequired, &problems);
  if (!problems.empty()) return Status::Invalid(entry_source + ": " + problems.front());
  GpuSpec scratch;
  MESHPLAN_RETURN_IF_ERROR(ReadGpu(entry_reader, *gpu, &scratch));
  MESHPLAN_RETURN_IF_ERROR(scratch.Validate().WithContext(entry_source));
  return std::move(*gpu);
}

// Replaces the root's gpu key by the table it stands for: a catalog entry with the file's own
// [gpu] keys laid over it, or the file's table as written when it names no entry.
Status ResolveGpuCatalog(toml::table& root, const std::string& source) {
  const Reader r(source);
  toml::node* gpu = root.get("gpu");
  if (gpu == nullptr) return Status::Ok();  // reported as missing where it is read
  std::string catalog;
  toml::table overrides;
  if (const auto* name = gpu->as_string()) {
    catalog = name->get();
  } else if (toml::table* table = gpu->as_table()) {
    const toml::node* named = table->get("catalog");
    if (named == nullptr) return Status::Ok();
    MESHPLAN_RETURN_IF_ERROR(r.String(*named, "gpu.catalog", &catalog));
    overrides = *table;
    overrides.erase("catalog");
  } else {
    return Status::Ok();  // the wrong type is reported where it is read
  }
  if (catalog.empty())
    return r.Fail("gpu.catalog", "empty (name a GPU: " + ShippedGpuNames() + ")");
  MESHPLAN_ASSIGN_OR_RETURN(toml::table merged, GpuCatalogTable(catalog, source));
  LayOver(merged, overrides);
  merged.insert_or_assign("catalog", catalog);
  root.insert_or_assign("gpu", std::move(merged));
  return Status::Ok();
}

Result<Topology> FromTable(toml::table root, const std::string& source) {
  Reader r(source);
  Topology topo;
  topo.source = source;
  MESHPLAN_RETURN_IF_ERROR(ResolveGpuCatalog(root, source));
  // Every missing or unknown key of every table at once, when there are several (a minimal file
  // written by hand took 3-4 rounds, one error each); a single one is reported where it is read.
  if (std::vector<std::string> problems = KeyProblems(root); problems.size() > 1) {
    std::string all;
    for (const std::string& problem : problems) all += (all.empty() ? "" : "; ") + problem;
    return Status::Invalid(source + ": " + std::to_string(problems.size()) + " problems: " + all);
  }
  MESHPLAN_RETURN_IF_ERROR(CheckTomlKeys(root, "", kRootKeys, source));
  MESHPLAN_RETURN_IF_ERROR(r.StringAt(root, "", "name", true, &topo.name));
  MESHPLAN_RETURN_IF_ERROR(r.StringAt(root, "", "description", false, &topo.description));
  MESHPLAN_RETURN_IF_ERROR(ReadProvenance(r, root, &topo.provenance));

  auto gpu = r.Find(root, "", "gpu", true);
  if (!gpu.ok()) return gpu.status();
  if (!(*gpu)->is_table())
    return r.Fail("gpu",
                  "expected a table ([gpu]) or a GPU catalog name, got " + TomlTypeName(**gpu));
  MESHPLAN_RETURN_IF_ERROR(ReadGpu(r, *(*gpu)->as_table(), &topo.gpu));

  auto framework = r.Find(root, "", "framework", false);
  if (!framework.ok()) return framework.status();
  if (*framework != nullptr) {
    const toml::table* table = (*framework)->as_table();
    if (table == nullptr)
      return r.Fail("framework",
                    "expected a table ([framework]), got " + TomlTypeName(**framework));
    MESHPLAN_RETURN_IF_ERROR(r.CheckKeys(*table, "framework", {"step_overhead_us"}));
    double overhead_us = 0;
    MESHPLAN_RETURN_IF_ERROR(
        r.NumberAt(*table, "framework", "step_overhead_us", false, &overhead_us));
    topo.framework.step_overhead_s = UsToSeconds(overhead_us);
  }
  MESHPLAN_RETURN_IF_ERROR(ReadCalibration(r, root, &topo.calibration));

  auto levels = r.Find(root, "", "level", true);
  if (!levels.ok()) return levels.status();
  const toml::array* array = (*levels)->as_array();
  if (array == nullptr) {
    return r.Fail("level",
                  "expected an array of tables ([[level]]), got " + TomlTypeName(**levels));
  }
  for (size_t i = 0; i < array->size(); ++i) {
    const std::string key = "level[" + std::to_string(i) + "]";
    const toml::table* table = (*array)[i].as_table();
    if (table == nullptr) return r.Fail(key, "expected a table, got " + TomlTypeName((*array)[i]));
    NetworkLevel level;
    MESHPLAN_RETURN_IF_ERROR(ReadLevel(r, *table, key, &level));
    topo.levels.push_back(std::move(level));
  }
  // Validate() names the key ("level[1].group_size: ..."); add the source in front.
  MESHPLAN_RETURN_IF_ERROR(topo.Validate().WithContext(source));
  return topo;
}

// Shortest decimal x such that to_model(x) == value exactly, so that writing and reading back
// gives the same Topology bit for bit ("0.94" rather than "0.93999999999999995").
// The shortest decimal (in file units) that reads back as `value` (model units), or the
// 17-digit one when none does.
std::string ShortestDecimal(double value, double (*to_model)(double), double from_model) {
  const double approx = value / from_model;
  char buffer[64];
  double shortest = approx;
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof buffer, "%.*g", precision, approx);
    shortest = std::strtod(buffer, nullptr);
    if (to_model(shortest) == value) break;
  }
  // to_chars picks the shorter of fixed and scientific form: "3350" rather than "3.35e+03".
  auto end = std::to_chars(buffer, buffer + sizeof buffer, shortest).ptr;
  return std::string(buffer, end);
}

// ShortestDecimal, made stable under reading back: a value no decimal reads back as exactly
// (units converted in floating point) is written as the decimal of the value its first decimal
// reads back as, repeated until that no longer changes, so writing a file read from a written
// file gives the same text (the topology fuzz target checks it).
std::string FormatNumber(double value, double (*to_model)(double), double from_model) {
  std::string text = ShortestDecimal(value, to_model, from_model);
  for (int i = 0; i < 8; ++i) {
    const double again = to_model(std::strtod(text.c_str(), nullptr));
    if (again == value) break;
    value = again;
    const std::string next = ShortestDecimal(value, to_model, from_model);
    if (next == text) break;
    text = next;
  }
  return text;
}

// "{ forward_tile_rows = 128, ... }": the keys that differ from KernelOccupancy's defaults.
std::string OccupancyText(const KernelOccupancy& o) {
  const KernelOccupancy plain;
  std::string out;
  auto add = [&](const char* key, int64_t value, int64_t default_value) {
    if (value == default_value) return;
    out += (out.empty() ? "{ " : ", ") + std::string(key) + " = " + std::to_string(value);
  };
  add("forward_tile_rows", o.forward_tile_rows, plain.forward_tile_rows);
  add("forward_ctas_per_sm", o.forward_ctas_per_sm, plain.forward_ctas_per_sm);
  add("backward_tile_rows", o.backward_tile_rows, plain.backward_tile_rows);
  add("backward_ctas_per_sm", o.backward_ctas_per_sm, plain.backward_ctas_per_sm);
  add("curve_batch_heads", o.curve_batch_heads, plain.curve_batch_heads);
  add("forward_tile_keys", o.forward_tile_keys, plain.forward_tile_keys);
  add("forward_causal_tile_keys", o.forward_causal_tile_keys, plain.forward_causal_tile_keys);
  add("backward_tile_queries", o.backward_tile_queries, plain.backward_tile_queries);
  add("backward_causal_tile_queries", o.backward_causal_tile_queries,
      plain.backward_causal_tile_queries);
  return out.empty() ? out : out + " }";
}

// "[[512, 0.3], [1024, 0.4]]"
std::string CurveText(const std::vector<EfficiencyPoint>& curve) {
  std::string out = "[";
  for (size_t i = 0; i < curve.size(); ++i) {
    out += (i ? ", [" : "[") + std::to_string(curve[i].block_tokens) + ", " +
           FormatNumber(curve[i].efficiency, Identity, 1) + "]";
  }
  return out + "]";
}

}  // namespace

Result<Topology> ParseTopologyToml(std::string_view text, const std::string& source) {
  MESHPLAN_ASSIGN_OR_RETURN(auto root, ParseTomlDocument(text, source));
  return FromTable(std::move(root), source);
}

Result<Topology> LoadTopologyFile(const std::string& path) {
  MESHPLAN_ASSIGN_OR_RETURN(auto text, ReadTextFile(path));
  return ParseTopologyToml(text, path);
}

Topology DefaultTopology() {
  auto parsed = ParseTopologyToml(DefaultTopologyToml(), "built-in");
  if (!parsed.ok()) {
    // The text is compiled in from topologies/dgx-h100-32node.toml, which the tests load: a
    // failure here is a broken build, not something a user can fix.
    std::fprintf(stderr, "meshplan: the built-in topology does not parse: %s\n",
                 parsed.status().message().c_str());
    std::abort();
  }
  return std::move(parsed).value();
}

std::string TopologyToToml(const Topology& t, bool gpu_by_catalog) {
  std::ostringstream out;
  out << "name = " << TomlQuote(t.name) << "\n";
  if (!t.description.empty()) out << "description = " << TomlQuote(t.description) << "\n";
  if (!t.provenance.empty()) {
    out << "provenance = [\n";
    for (const std::string& line : t.provenance) out << "  " << TomlQuote(line) << ",\n";
    out << "]\n";
  }
  const GpuSpec& g = t.gpu;
  out << "\n[gpu]\n";
  const bool by_catalog = gpu_by_catalog && !g.catalog.empty();
  if (by_catalog) {
    out << "catalog = " << TomlQuote(g.catalog) << "\n";
  } else {
    out << "model = " << TomlQuote(g.model) << "\n";
    out << "memory_GB = " << FormatNumber(g.memory_bytes, GbToBytes, 1e9) << "\n";
    out << "hbm_GBps = " << FormatNumber(g.hbm_bytes_per_s, GbToBytes, 1e9) << "\n";
    out << "launch_overhead_us = " << FormatNumber(g.launch_overhead_s, UsToSeconds, 1e-6) << "\n";
    out << "peak_tflops = {";
    bool first = true;
    for (const auto& [dtype, tflops] : g.peak_tflops) {
      out << (first ? " " : ", ") << DTypeName(dtype) << " = " << FormatNumber(tflops, Identity, 1);
      first = false;
    }
    out << " }\n";
    if (!g.gemm_efficiency.empty()) {
      out << "gemm_efficiency = {";
      bool first_gemm = true;
      for (const auto& [dtype, fraction] : g.gemm_efficiency) {
        out << (first_gemm ? " " : ", ") << DTypeName(dtype) << " = "
            << FormatNumber(fraction, Identity, 1);
        first_gemm = false;
      }
      out << " }\n";
    }
    // The active library's curve as the [gpu] fields, the others as [gpu.attention_kernels.NAME]
    // tables after the [gpu] keys; optional keys only when they differ from their defaults, so a
    // file without them writes back as it was.
    const GpuSpec defaults;
    if (g.attention_kernel != defaults.attention_kernel) {
      out << "attention_kernel = " << TomlQuote(g.attention_kernel) << "\n";
    }
    out << "attention_efficiency = " << CurveText(g.attention_efficiency) << "\n";
    if (g.backward_rate_ratio != defaults.backward_rate_ratio) {
      out << "backward_rate_ratio = " << FormatNumber(g.backward_rate_ratio, Identity, 1) << "\n";
    }
    if (g.efficiency_head_dim != defaults.efficiency_head_dim) {
      out << "efficiency_head_dim = " << g.efficiency_head_dim << "\n";
    }
    if (g.pair_overhead_flops != defaults.pair_overhead_flops) {
      out << "pair_overhead_flops = " << FormatNumber(g.pair_overhead_flops, Identity, 1) << "\n";
    }
    if (g.ring_step_partial_passes != defaults.ring_step_partial_passes) {
      out << "ring_step_partial_passes = " << FormatNumber(g.ring_step_partial_passes, Identity, 1)
          << "\n";
    }
    if (g.cut_row_extra_pairs != defaults.cut_row_extra_pairs) {
      out << "cut_row_extra_pairs = " << FormatNumber(g.cut_row_extra_pairs, Identity, 1) << "\n";
    }
    if (g.sliced_merge_passes != defaults.sliced_merge_passes) {
      out << "sliced_merge_passes = " << FormatNumber(g.sliced_merge_passes, Identity, 1) << "\n";
    }
    if (!(g.occupancy == defaults.occupancy))
      out << "occupancy = " << OccupancyText(g.occupancy) << "\n";
    if (g.sm_count != defaults.sm_count) out << "sm_count = " << g.sm_count << "\n";
    if (g.step_kernel_rate_fraction != defaults.step_kernel_rate_fraction) {
      out << "step_kernel_rate_fraction = "
          << FormatNumber(g.step_kernel_rate_fraction, Identity, 1) << "\n";
    }
    if (g.ranks_per_device != defaults.ranks_per_device ||
        g.concurrent_kernels != defaults.concurrent_kernels || g.sharing != defaults.sharing) {
      out << "ranks_per_device = " << g.ranks_per_device << "\n";
      out << "concurrent_kernels = " << FormatNumber(g.concurrent_kernels, Identity, 1) << "\n";
      out << "sharing = " << TomlQuote(DeviceSharingName(g.sharing)) << "\n";
    }
    if (g.copies_take_compute != defaults.copies_take_compute) {
      out << "copies_take_compute = " << (g.copies_take_compute ? "true" : "false") << "\n";
    }
    if (g.sharing_end_lag_s != defaults.sharing_end_lag_s) {
      out << "sharing_end_lag_us = " << FormatNumber(g.sharing_end_lag_s, UsToSeconds, 1e-6)
          << "\n";
    }
    if (g.sharing_end_lag_fraction != defaults.sharing_end_lag_fraction) {
      out << "sharing_end_lag_fraction = " << FormatNumber(g.sharing_end_lag_fraction, Identity, 1)
          << "\n";
    }
  }
  if (t.calibration.recorded() || t.calibration.has_reference() || t.calibration.draws > 0) {
    out << "\n[calibration]\n";
    if (t.calibration.recorded()) {
      out << "load_average = " << FormatNumber(t.calibration.load_average, Identity, 1) << "\n";
    }
    if (t.calibration.cores > 0) out << "cores = " << t.calibration.cores << "\n";
    if (t.calibration.kernel_median_error >= 0) {
      out << "kernel_median_error = "
          << FormatNumber(t.calibration.kernel_median_error, Identity, 1) << "\n";
    }
    if (t.calibration.kernel_max_error >= 0) {
      out << "kernel_max_error = " << FormatNumber(t.calibration.kernel_max_error, Identity, 1)
          << "\n";
    }
    if (t.calibration.other_processes_cores >= 0) {
      out << "other_processes_cores = "
          << FormatNumber(t.calibration.other_processes_cores, Identity, 1) << "\n";
    }
    if (t.calibration.has_reference()) {
      out << "reference_block_us = "
          << FormatNumber(t.calibration.reference_block_s, UsToSeconds, 1e-6) << "\n";
      out << "reference_head_dim = " << t.calibration.reference_head_dim << "\n";
    }
    if (t.calibration.speed_spread >= 0) {
      out << "speed_spread = " << FormatNumber(t.calibration.speed_spread, Identity, 1) << "\n";
    }
    if (t.calibration.draws > 0) out << "draws = " << t.calibration.draws << "\n";
    if (t.calibration.has_draw_range()) {
      out << "draw_range = [" << FormatNumber(t.calibration.draw_low, Identity, 1) << ", "
          << FormatNumber(t.calibration.draw_high, Identity, 1) << "]\n";
    }
  }
  if (t.framework.step_overhead_s != 0) {
    out << "\n[framework]\nstep_overhead_us = "
        << FormatNumber(t.framework.step_overhead_s, UsToSeconds, 1e-6) << "\n";
  }
  if (!by_catalog) {
    const AttentionKernelCurve plain;
    for (const auto& [name, c] : g.attention_kernels) {
      if (name == g.attention_kernel) continue;
      out << "\n[gpu.attention_kernels." << name << "]\n";
      out << "efficiency = " << CurveText(c.efficiency) << "\n";
      if (c.backward_rate_ratio != plain.backward_rate_ratio) {
        out << "backward_rate_ratio = " << FormatNumber(c.backward_rate_ratio, Identity, 1) << "\n";
      }
      if (c.head_dim != plain.head_dim) out << "head_dim = " << c.head_dim << "\n";
      if (c.pair_overhead_flops != plain.pair_overhead_flops) {
        out << "pair_overhead_flops = " << FormatNumber(c.pair_overhead_flops, Identity, 1) << "\n";
      }
      if (c.ring_step_partial_passes != plain.ring_step_partial_passes) {
        out << "ring_step_partial_passes = "
            << FormatNumber(c.ring_step_partial_passes, Identity, 1) << "\n";
      }
      if (c.cut_row_extra_pairs != plain.cut_row_extra_pairs) {
        out << "cut_row_extra_pairs = " << FormatNumber(c.cut_row_extra_pairs, Identity, 1) << "\n";
      }
      if (c.sliced_merge_passes != plain.sliced_merge_passes) {
        out << "sliced_merge_passes = " << FormatNumber(c.sliced_merge_passes, Identity, 1) << "\n";
      }
      if (!(c.occupancy == plain.occupancy))
        out << "occupancy = " << OccupancyText(c.occupancy) << "\n";
      out << "source = " << TomlQuote(c.source) << "\n";
    }
  }
  for (const NetworkLevel& l : t.levels) {
    out << "\n[[level]]\n";
    out << "name = " << TomlQuote(l.name) << "\n";
    out << "kind = " << TomlQuote(LinkKindName(l.kind)) << "\n";
    out << "group_size = " << l.group_size << "\n";
    out << "bandwidth_GBps = " << FormatNumber(l.bandwidth_bytes_per_s, GbToBytes, 1e9) << "\n";
    out << "latency_us = " << FormatNumber(l.latency_s, UsToSeconds, 1e-6) << "\n";
    out << "oversubscription = " << FormatNumber(l.oversubscription, Identity, 1) << "\n";
    if (!l.torus_dims.empty()) {
      out << "dims = [";
      for (size_t i = 0; i < l.torus_dims.size(); ++i) out << (i ? ", " : "") << l.torus_dims[i];
      out << "]\n";
    }
    for (const LevelFabric& f : l.fabrics) {
      out << "\n[[level.fabric]]\n";
      out << "name = " << TomlQuote(f.name) << "\n";
      out << "units = [";
      for (size_t i = 0; i < f.units.size(); ++i) {
        const auto& [first, last] = f.units[i];
        out << (i ? ", " : "");
        if (first == last) {
          out << first;
        } else {
          out << "\"" << first << "-" << last << "\"";
        }
      }
      out << "]\n";
      out << "bandwidth_GBps = " << FormatNumber(f.bandwidth_bytes_per_s, GbToBytes, 1e9) << "\n";
      out << "latency_us = " << FormatNumber(f.latency_s, UsToSeconds, 1e-6) << "\n";
    }
  }
  return out.str();
}

}  // namespace meshplan
