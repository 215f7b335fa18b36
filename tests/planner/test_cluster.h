// Small clusters (and a workload that suits them) built in code for tests.
#pragma once

#include "core/cluster/topology.h"
#include "core/plan/plan.h"
#include "core/workload/workload.h"

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
  t.levels.push_back({"nvlink",
                      LinkKind::kSwitch,
                      gpus_per_node,
                      nvlink_gbps * 1e9,
                      nvlink_us * 1e-6,
                      1.0,
                      {},
                      {}});
  t.levels.push_back({"ib", LinkKind::kFatTree, nodes, ib_gbps * 1e9, ib_us * 1e-6, 1.0, {}, {}});
  return t;
}

// 4K tokens, 8 query and 4 KV heads of dimension 64, the default dtype, mask and pass: every
// scheme has valid plans for it on a SmallCluster of a few GPUs, and replays take milliseconds.
inline Workload SmallWorkload() {
  Workload w;
  w.seq_len = 4096;
  w.q_heads = 8;
  w.kv_heads = 4;
  w.head_dim = 64;
  return w;
}

// Compute-bound on purpose, on one node of n SmallCluster GPUs (400 GB/s, 1 us): a 64K-token GQA
// layer (32 query, 8 KV heads of 128, causal), so one block (~1 ms forward) outlasts every message
// of a step (a KV shard of 8K tokens is 32 MiB, ~85 us; its fp32 dK+dV partial ~170 us). Every
// pipeline step then lasts one block, and a time is a count of blocks and hops.
inline Workload ComputeBoundWorkload(Pass pass) {
  Workload w;
  w.seq_len = 64 * 1024;
  w.q_heads = 32;
  w.kv_heads = 8;
  w.head_dim = 128;
  w.mask = Mask::Causal();
  w.pass = pass;
  return w;
}

// Ring over all `ring` GPUs of a context-parallel placement, on zigzag shards.
inline SchemeParams ZigzagRing(int64_t ring) {
  SchemeParams p;
  p.scheme = Scheme("ring");
  p.layout = Layout::kZigzag;
  p.ring = ring;
  p.placement = {"cp"};
  return p;
}

}  // namespace meshplan::testing
