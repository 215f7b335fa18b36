// A level's mixed fabrics ([[level.fabric]], core/cluster/topology.h LevelFabric) in one phrase,
// shared by every place that names a level's bandwidth (plan headers, topo list and show).
#pragma once

#include <string>

#include "core/cluster/topology.h"

namespace meshplan::report {

// " (roce 25 GB/s on 1 unit; eth 12.5 GB/s on 2 units)", or "" for a level without fabrics.
std::string FabricsText(const NetworkLevel& level);

}  // namespace meshplan::report
