// Reading cluster descriptions from TOML (schema: topologies/README.md).
#pragma once

#include <string>
#include <string_view>

#include "core/base/status.h"
#include "core/cluster/topology.h"

namespace meshplan {

// Parses and validates a topology. `source` names the text in errors ("file.toml"); every
// error is one line naming source, key and reason, e.g.
//   "t.toml: level[1].group_size: must be at least 1". Unknown keys are errors.
Result<Topology> ParseTopologyToml(std::string_view text, const std::string& source);
// Reads a file; a missing or unreadable file is an error naming it.
Result<Topology> LoadTopologyFile(const std::string& path);
// The built-in default cluster (32 nodes x 8 H100, topologies/dgx-h100-32node.toml).
Topology DefaultTopology();
// The text of that file, compiled in.
std::string_view DefaultTopologyToml();
// Writes the topology back as TOML (the loader's schema), for `meshplan topo show --format toml`.
// gpu_by_catalog: a GPU taken from the catalog (GpuSpec::catalog) is written as `catalog = NAME`
// alone, which the caller guarantees is the whole of it (`topo new`); otherwise every key.
std::string TopologyToToml(const Topology& topology, bool gpu_by_catalog = false);

}  // namespace meshplan
