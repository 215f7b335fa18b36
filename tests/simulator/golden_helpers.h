// Building blocks of the simulator's golden tests: a test GPU with round numbers, identity
// placements, and hand-written schedules of messages.
#pragma once

#include <cstdint>
#include <vector>

#include "core/cluster/topology.h"
#include "core/plan/schedule.h"

namespace meshplan::sim::testing {

// A GPU of 1000 bf16 TFLOP/s at 50% efficiency, no launch overhead, and no network levels yet.
inline Topology TestGpuCluster(const char* name) {
  Topology t;
  t.name = name;
  t.source = "test";
  t.gpu.model = "TestGPU";
  t.gpu.memory_bytes = 80e9;
  t.gpu.hbm_bytes_per_s = 2e12;
  t.gpu.launch_overhead_s = 0;
  t.gpu.peak_tflops = {{DType::kBf16, 1000}};
  t.gpu.attention_efficiency = {{1, 0.5}};
  return t;
}

// Rank r on GPU r.
inline std::vector<int64_t> Identity(int64_t n) {
  std::vector<int64_t> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = i;
  return v;
}

inline Op Send(int32_t peer, int64_t bytes) {
  Op op;
  op.kind = OpKind::kSend;
  op.stream = StreamId::kSend;
  op.peer = peer;
  op.bytes = bytes;
  op.tensors = kTensorKV;
  return op;
}

inline Op Recv(int32_t peer, int64_t bytes) {
  Op op = Send(peer, bytes);
  op.kind = OpKind::kRecv;
  op.stream = StreamId::kRecv;
  return op;
}

// `ranks` empty programs over a contiguous layout of 1024 tokens.
inline Schedule Empty(int64_t ranks) {
  Schedule s;
  s.num_ranks = ranks;
  s.layout = ShardLayout{Layout::kContiguous, 1024, 1, 1};
  s.ranks.resize(ranks);
  return s;
}

// `p` ranks in one group, each issuing one ring all-gather of `shard_bytes` per rank (its op
// carries the (p - 1) x shard_bytes it sends).
inline Schedule AllGatherSchedule(int64_t p, int64_t shard_bytes) {
  Schedule s = Empty(p);
  std::vector<int32_t> group;
  for (int64_t r = 0; r < p; ++r) group.push_back(static_cast<int32_t>(r));
  s.groups.push_back(group);
  for (int64_t r = 0; r < p; ++r) {
    Op ag;
    ag.kind = OpKind::kAllGather;
    ag.stream = StreamId::kCollective;
    ag.group = 0;
    ag.tensors = kTensorKV;
    ag.bytes = (p - 1) * shard_bytes;
    s.ranks[r].Add(ag);
  }
  return s;
}

}  // namespace meshplan::sim::testing
