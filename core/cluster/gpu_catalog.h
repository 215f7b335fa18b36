// The GPU catalog: one TOML file per GPU model (topologies/gpus/NAME.toml) holding its memory,
// HBM, peaks and every attention library's kernel curve and per-step costs with their sources.
// Cluster files name one (`[gpu] catalog = "h100-sxm5"`) and may override any key, so a file a
// user writes predicts exactly as the shipped ones do. The shipped entries are compiled in
// (core/CMakeLists.txt), so a name resolves without the source tree or an installation.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"

namespace meshplan {

struct ShippedGpu {
  std::string_view name;  // the file name without ".toml": "h100-sxm5"
  std::string_view toml;  // the file's text
};

// Every shipped entry, sorted by name.
std::vector<ShippedGpu> ShippedGpus();

// "a100-sxm4-80gb, b200-nvl72, ..." for messages.
std::string ShippedGpuNames();

// The text of the entry `name`. Error (kNotFound): no such entry, listing the shipped names.
Result<std::string_view> ShippedGpuToml(std::string_view name);

// True when a gpu.catalog value names a shipped entry rather than a file: no '/' and no ".toml"
// at the end (as for cluster names, core/cluster/topology_catalog.h).
bool IsGpuCatalogName(std::string_view value);

// Where a catalog path given in the cluster file `cluster_source` points: absolute paths as they
// are, relative ones against that file's directory (the file's own folder, not the working
// directory, so a cluster and its GPU file move together).
std::string GpuCatalogPath(std::string_view value, const std::string& cluster_source);

}  // namespace meshplan
