#include "core/workload/parallel_degrees.h"

namespace meshplan {

std::string ParallelDegrees::Describe(int64_t cp) const {
  return "TP " + std::to_string(tp) + " x CP " + std::to_string(cp) + " x DP " +
         std::to_string(dp) + " = " + std::to_string(tp * cp * dp) + " GPUs";
}

Result<Topology> ContextParallelCluster(const Topology& topology, const ParallelDegrees& degrees) {
  if (degrees.tp < 1) return Status::Invalid("--tp: must be at least 1");
  if (degrees.dp < 1) return Status::Invalid("--dp: must be at least 1");
  if (degrees.trivial()) return topology;
  if (topology.gpu.ranks_per_device > 1) {
    return Status::Invalid(
        "--tp/--dp: " + topology.source +
        " shares each device among ranks (gpu.ranks_per_device); TP and DP need a GPU per rank");
  }
  if (topology.levels.empty()) return Status::Invalid("--tp/--dp: the cluster has no levels");
  Topology out = topology;
  NetworkLevel& node = out.levels.front();
  if (degrees.tp > 1) {
    if (node.kind == LinkKind::kTorus) {
      return Status::Invalid("--tp: the innermost level '" + node.name +
                             "' is a torus; meshplan places TP in a node of switched GPUs");
    }
    if (node.group_size % degrees.tp != 0) {
      return Status::Invalid("--tp: " + std::to_string(degrees.tp) + " does not divide the " +
                             std::to_string(node.group_size) + " GPUs of a '" + node.name +
                             "' group (TP stays inside a node)");
    }
    node.group_size /= degrees.tp;
  }
  int64_t left = degrees.dp;
  for (auto level = out.levels.rbegin(); level != out.levels.rend() && left > 1; ++level) {
    const int64_t g = level->group_size;
    if (level->kind == LinkKind::kTorus && g > 1) {
      return Status::Invalid("--dp: the level '" + level->name +
                             "' is a torus; meshplan cannot take replicas out of it");
    }
    if (g % left == 0) {
      level->group_size = g / left;
      left = 1;
    } else if (left % g == 0) {
      level->group_size = 1;
      left /= g;
    } else {
      return Status::Invalid("--dp: " + std::to_string(degrees.dp) +
                             " replicas do not divide the cluster's groups (level '" + level->name +
                             "' has " + std::to_string(g) + ")");
    }
  }
  if (left > 1) {
    return Status::Invalid("--dp: " + std::to_string(degrees.dp) + " replicas of TP " +
                           std::to_string(degrees.tp) + " need more than the cluster's " +
                           std::to_string(topology.num_gpus()) + " GPUs");
  }
  if (Status st = out.Validate(); !st.ok()) return st.WithContext("--tp/--dp");
  return out;
}

Status DivideHeads(Workload& workload, int64_t tp) {
  if (tp < 1) return Status::Invalid("--tp: must be at least 1");
  if (workload.q_heads % tp != 0) {
    return Status::Invalid("--tp: " + std::to_string(tp) + " does not divide the " +
                           std::to_string(workload.q_heads) + " query heads");
  }
  if (workload.kv_heads % tp != 0) {
    return Status::Invalid("--tp: " + std::to_string(tp) + " does not divide the " +
                           std::to_string(workload.kv_heads) +
                           " KV heads (meshplan does not replicate KV heads across TP ranks)");
  }
  workload.q_heads /= tp;
  workload.kv_heads /= tp;
  return Status::Ok();
}

}  // namespace meshplan
