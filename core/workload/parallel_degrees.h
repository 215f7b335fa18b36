// Tensor and data parallelism beside context parallelism (--tp, --dp): what the context-parallel
// group of a larger job sees of the cluster and of the model.
#pragma once

#include <cstdint>
#include <string>

#include "core/base/status.h"
#include "core/cluster/topology.h"
#include "core/workload/workload.h"

namespace meshplan {

struct ParallelDegrees {
  int64_t tp = 1;  // tensor-parallel ranks: the innermost GPUs of a node, dividing the heads
  int64_t dp = 1;  // replicas of the whole model: the outermost groups of the cluster

  bool trivial() const { return tp == 1 && dp == 1; }
  // "TP 8 x CP 32 x DP 1 = 256 GPUs" for a context-parallel group of `cp` GPUs.
  std::string Describe(int64_t cp) const;
};

// The cluster one context-parallel group runs on. TP takes `tp` consecutive GPUs of each group of
// the innermost level (a node): that level's groups hold group_size / tp CP ranks, one per TP
// group, and each CP rank keeps its own GPU's links. The job runs tp CP groups side by side, one
// per TP rank, each over its own GPUs and their NICs: a CP collective leaving a node spreads over
// the NICs of its own ranks there (group_size / tp of them), the others carrying the other TP
// ranks' groups. DP replicas take the outermost levels (their groups, from the outside in). Each
// GPU's memory is unchanged. Errors name --tp or --dp and the level: a degree below 1, TP that
// does not divide a node's GPUs or spans a torus, DP that does not divide what TP leaves, and a
// cluster whose ranks share devices (a calibrated CPU file).
Result<Topology> ContextParallelCluster(const Topology& topology, const ParallelDegrees& degrees);

// The workload one GPU of a TP group computes: q_heads / tp query and kv_heads / tp KV heads.
// Errors name --tp: TP that divides the query heads but not the KV heads (meshplan does not
// replicate KV heads), or the query heads.
Status DivideHeads(Workload& workload, int64_t tp);

}  // namespace meshplan
