// `meshplan topo show`'s text: a topology's GPU (memory, peaks, kernel curves and the model's
// per-GPU terms) and its network levels, one line each, for people.
#pragma once

#include <string>

#include "core/cluster/topology.h"

namespace meshplan::report {

std::string TopologyText(const Topology& topology);

}  // namespace meshplan::report
