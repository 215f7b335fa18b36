// Small clusters built in code for planner tests.
#pragma once

#include "core/topology.h"

namespace meshplan::testing {

// `nodes` nodes of `gpus_per_node` GPUs: a switch level ("nvlink") and a fat tree ("ib").
// Bandwidths in GB/s per GPU per direction, latencies in microseconds.
inline Topology SmallCluster(int64_t gpus_per_node, int64_t nodes, double nvlink_gbps = 400,
                             double ib_gbps = 50, double nvlink_us = 1, double ib_us = 5) {
  Topology t;
  t.name = "test-cluster";
  t.source = "test";
  t.gpu.model = "TestGPU";
  t.gpu.memory_bytes = 80e9;
  t.gpu.hbm_bytes_per_s = 3e12;
  t.gpu.peak_tflops = {{DType::kBf16, 1000}, {DType::kFp16, 1000}, {DType::kFp32, 500}};
  t.gpu.attention_efficiency = {{1, 0.5}};
  t.levels.push_back({"nvlink", LinkKind::kSwitch, gpus_per_node, nvlink_gbps * 1e9, nvlink_us * 1e-6, 1.0, {}});
  t.levels.push_back({"ib", LinkKind::kFatTree, nodes, ib_gbps * 1e9, ib_us * 1e-6, 1.0, {}});
  return t;
}

}  // namespace meshplan::testing
