// How the executors read a schedule op's tensor bits (core/plan/schedule.h), shared by the CPU rank
// runner and the device engine so that both give every op the same meaning.
#pragma once

#include <cstdint>
#include <vector>

#include "core/plan/schedule.h"

namespace meshplan::exec {

// Tensors that belong to the Q side of a block (their shard is an op's q_shard).
inline constexpr uint16_t kQSideTensors =
    kTensorQ | kTensorO | kTensorLse | kTensorDO | kTensorD | kTensorDQ;

// Whether a message carrying `message` hands `tensor` over (a partial still to be reduced: O with
// its LSE, dQ, dK, dV) rather than sending a copy.
inline bool HandsOver(uint16_t tensor, uint16_t message) {
  if (tensor == kTensorO || tensor == kTensorDQ || tensor == kTensorDK || tensor == kTensorDV)
    return true;
  return tensor == kTensorLse && (message & kTensorO) != 0;
}

// The single-tensor bits of `tensors`, lowest first.
inline std::vector<uint16_t> TensorBitsOf(uint16_t tensors) {
  std::vector<uint16_t> out;
  for (int bit = 0; bit < 10; ++bit) {
    if (tensors & (1u << bit)) out.push_back(static_cast<uint16_t>(1u << bit));
  }
  return out;
}

// Elements per head of a row: 1 for LSE and D, the head dimension otherwise.
inline int32_t TensorDim(uint16_t tensor, int32_t head_dim) {
  return tensor == kTensorLse || tensor == kTensorD ? 1 : head_dim;
}

// The shard an op names for `tensor`.
inline int32_t ShardOf(const Op& op, uint16_t tensor) {
  return (tensor & kQSideTensors) ? op.q_shard : op.kv_shard;
}

}  // namespace meshplan::exec
