// The global outputs of a run as the engine fills them: each rank's final entries of O, LSE, dQ,
// dK and dV written into whole tensors by token position, with a coverage map so that a run can
// prove every output element was produced. Used by the engine (DeviceEngine::CollectOutputs) and
// the entry points above it (executor/execute.h, executor/gather.h).
#pragma once

#include <cstdint>
#include <vector>

#include "core/workload/workload.h"
#include "executor/device/shard_store.h"
#include "executor/io/tensor.h"

namespace meshplan::exec {

// Writes a rank's final entry of `tensor` (O, LSE, dQ, dK or dV; others are ignored, as are
// tensors outside w.pass) into the global outputs (null: only marks) and marks its elements in
// `covered` (CoverageSize(w) elements, may be null).
void WriteOutputEntry(uint16_t tensor, const Entry& entry, const Workload& w,
                      AttentionTensors<float>* outputs, std::vector<uint8_t>* covered);

// Elements of a `covered` mask for `w` (ExecuteRank's, WriteOutputEntry's): 5 tensors (O, LSE, dQ,
// dK, dV) x B x S x Hq, in that order, each [batch][token][query head].
size_t CoverageSize(const Workload& w);

// Output tensors sized for the workload (zeros).
AttentionTensors<float> OutputTensors(const Workload& workload);

}  // namespace meshplan::exec
