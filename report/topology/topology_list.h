// `meshplan topo list`: the shipped clusters as a table, one row per file (name, GPUs, GPU model,
// network levels) with its one-line description below it.
#pragma once

#include <string>
#include <vector>

#include "core/cluster/topology.h"
#include "core/cluster/topology_catalog.h"

namespace meshplan::report {

// A level as "ib rail-fat-tree 4 x 50 GB/s": name, kind, group size (torus: its dims), bandwidth
// per GPU per direction (a full mesh: per link, "8 x 48 GB/s a link"), and the oversubscription
// when above 1 ("2:1").
std::string DescribeLevel(const NetworkLevel& level);

// Every cluster of `dir`: a header naming the directory, the table, and a closing line on where
// the numbers come from.
std::string TopologyListText(const std::string& dir, const std::vector<ShippedTopology>& clusters);

// The same as one JSON object (`topo list --format json`): {"dir": ..., "clusters": [{"name",
// "path", "description", "gpus", "gpu", "attention_kernel", "levels": [{"name", "kind",
// "group_size", "bandwidth_GBps", "latency_us", "oversubscription", and on a level with mixed
// fabrics "fabrics": [{"name", "units": [[first, last], ...], "bandwidth_GBps",
// "latency_us"}]}]}]}, ending in a newline.
std::string TopologyListJson(const std::string& dir, const std::vector<ShippedTopology>& clusters);
// One cluster as TopologyListJson's element (`topo show --format json`), its file as "path".
std::string TopologyJson(const Topology& topology);

}  // namespace meshplan::report
