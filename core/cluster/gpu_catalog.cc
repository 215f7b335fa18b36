#include "core/cluster/gpu_catalog.h"

#include <algorithm>

#include "core/base/did_you_mean.h"

namespace meshplan {

// Generated from topologies/gpus/*.toml (core/cluster/gpu_catalog_data.cc.in).
std::vector<ShippedGpu> CompiledGpuCatalog();

std::vector<ShippedGpu> ShippedGpus() {
  std::vector<ShippedGpu> out = CompiledGpuCatalog();
  std::sort(out.begin(), out.end(),
            [](const ShippedGpu& a, const ShippedGpu& b) { return a.name < b.name; });
  return out;
}

std::string ShippedGpuNames() {
  std::string out;
  for (const ShippedGpu& gpu : ShippedGpus())
    out += (out.empty() ? "" : ", ") + std::string(gpu.name);
  return out;
}

Result<std::string_view> ShippedGpuToml(std::string_view name) {
  for (const ShippedGpu& gpu : ShippedGpus()) {
    if (gpu.name == name) return gpu.toml;
  }
  std::vector<std::string> names;
  for (const ShippedGpu& gpu : ShippedGpus()) names.emplace_back(gpu.name);
  return Status::NotFound("unknown GPU '" + std::string(name) + "'" + DidYouMean(name, names) +
                          " (shipped: " + ShippedGpuNames() + "; or a path to a GPU file)");
}

bool IsGpuCatalogName(std::string_view value) {
  const std::string_view suffix = ".toml";
  const bool toml_suffix =
      value.size() >= suffix.size() && value.substr(value.size() - suffix.size()) == suffix;
  return value.find('/') == std::string_view::npos && !toml_suffix;
}

std::string GpuCatalogPath(std::string_view value, const std::string& cluster_source) {
  if (!value.empty() && value.front() == '/') return std::string(value);
  const size_t slash = cluster_source.rfind('/');
  if (slash == std::string::npos) return std::string(value);
  return cluster_source.substr(0, slash + 1) + std::string(value);
}

}  // namespace meshplan
