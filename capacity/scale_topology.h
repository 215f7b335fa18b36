// Growing or shrinking a cluster description to another GPU count, the axis capacity planning
// sweeps over.
#pragma once

#include <cstdint>

#include "core/base/status.h"
#include "core/cluster/topology.h"

namespace meshplan::capacity {

// The topology grown or shrunk to `gpus` GPUs by changing the outermost level's group size
// (inner levels, e.g. the 8 GPUs of a node, stay). Error when gpus is not a positive multiple of
// the inner levels' span. The name gets a "@<gpus>" suffix when it changes.
Result<Topology> ScaleTopology(const Topology& topology, int64_t gpus);

}  // namespace meshplan::capacity
