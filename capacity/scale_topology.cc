#include "capacity/scale_topology.h"

#include <string>

namespace meshplan::capacity {

Result<Topology> ScaleTopology(const Topology& topology, int64_t gpus) {
  if (topology.levels.empty())
    return Status::Invalid(topology.name + ": topology has no network level");
  const int outer = topology.num_levels() - 1;
  const int64_t inner = outer > 0 ? topology.Span(outer - 1) : 1;
  if (gpus <= 0 || gpus % inner != 0) {
    return Status::Invalid(
        topology.name + ": cannot scale to " + std::to_string(gpus) +
        " GPUs: not a positive multiple of the " + std::to_string(inner) + " GPUs of one '" +
        (outer > 0 ? topology.levels[outer - 1].name : std::string("gpu")) + "' group");
  }
  if (gpus == topology.num_gpus()) return topology;
  Topology scaled = topology;
  NetworkLevel& level = scaled.levels.back();
  level.group_size = gpus / inner;
  if (level.kind == LinkKind::kTorus && !level.torus_dims.empty()) {
    // The last torus dimension absorbs the change; the others stay.
    int64_t others = 1;
    for (size_t i = 0; i + 1 < level.torus_dims.size(); ++i) others *= level.torus_dims[i];
    if (level.group_size % others != 0) {
      return Status::Invalid(topology.name + ": cannot scale to " + std::to_string(gpus) +
                             " GPUs: the torus level '" + level.name + "' needs a multiple of " +
                             std::to_string(others * inner) + " GPUs");
    }
    level.torus_dims.back() = level.group_size / others;
  }
  scaled.name = topology.name + "@" + std::to_string(gpus);
  if (Status st = scaled.Validate(); !st.ok()) {
    return st.WithContext(topology.name + ": scaled to " + std::to_string(gpus) + " GPUs");
  }
  return scaled;
}

}  // namespace meshplan::capacity
