// Host implementations of the GPU executor's kernels (executor/cuda/attention_kernels.h), on
// host memory with the same argument types and semantics. They let the device engine's logic
// (placement, transfers, all-to-all assembly, merges) run and be checked on a machine without a
// GPU; the block math is the CPU kernels' (executor/kernels/block_kernels.h) on inputs decoded from
// bf16/fp16 (fp32 inputs are read in place). The mask comes from the MaskRule, not from
// BlockProblem::mask (host pointers only).
#pragma once

#include <cstdint>

#include "executor/device/kernel_args.h"
#include "executor/kernels/block_kernels.h"

namespace meshplan::exec {

void HostBlockForward(const BlockProblem& p, const MaskRule& mask, const TensorView& q,
                      const TensorView& k, const TensorView& v, const TensorView& o,
                      const TensorView& lse);
void HostBlockBackward(const BlockProblem& p, const MaskRule& mask, const TensorView& q,
                       const TensorView& k, const TensorView& v, const TensorView& d_o,
                       const TensorView& lse, const TensorView& delta, const TensorView& dq,
                       const TensorView& dk, const TensorView& dv);
void HostMergePartial(float* o, float* lse, const float* o_in, const float* lse_in, int64_t count,
                      int32_t dim);
void HostAddInto(float* acc, const float* in, int64_t n);
void HostDelta(InputType type, const float* o, const void* d_o, float* delta, int64_t batch,
               int64_t rows, int32_t heads, int32_t dim);
void HostFill(float* data, float value, int64_t n);
void HostRowCopy(const RowCopy& c);

}  // namespace meshplan::exec
