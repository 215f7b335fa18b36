// CUDA block-attention kernels and the small device kernels the GPU executor needs. This header
// is plain C++ (no CUDA syntax), so host code compiled by g++ can call the launchers.
//
// Layout of every tensor view: device memory [batch][rows][heads][dim], row-major (dim fastest),
// holding the global heads [head_begin, head_begin + heads). LSE and D views use dim = 1.
// Inputs Q, K, V, dO are bf16 or fp16 (InputType); accumulators O, LSE, D, dQ, dK, dV are fp32.
// Semantics match the CPU kernels (executor/kernels/block_kernels.h) and the reference
// (executor/kernels/reference.h): scores are scale * q.k, masked pairs are excluded, a row with no
// visible key has O = 0 and LSE = -inf. GQA: query head h reads KV head h / group_size.
//
// Every launcher only enqueues work on `stream` and returns the launch error (cudaSuccess when
// the launch was accepted); it never synchronises.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "executor/device/kernel_args.h"

namespace meshplan::exec::cuda {

using exec::BlockProblem;
using exec::DeviceMask;
using exec::InputType;
using exec::KernelPath;
using exec::RowCopy;
using exec::TensorView;

// Forward of the block (Q rows against K/V rows), folded into the fp32 accumulator (o, lse) of
// the Q rows by the log-sum-exp merge. An empty accumulator (o = 0, lse = -inf) therefore ends
// holding exactly the block's O and LSE. o and lse have q.rows rows and hold the computed heads.
cudaError_t LaunchBlockForward(const BlockProblem& p, const TensorView& q, const TensorView& k,
                               const TensorView& v, const TensorView& o, const TensorView& lse,
                               KernelPath path, cudaStream_t stream);

// Backward of the block with the final lse and delta = rowsum(dO * O) of the Q rows: adds the
// block's contributions into the fp32 accumulators dq (Q rows, query heads) and dk, dv (K rows,
// KV heads of the computed query heads). Recomputes P from q, k and lse.
cudaError_t LaunchBlockBackward(const BlockProblem& p, const TensorView& q, const TensorView& k,
                                const TensorView& v, const TensorView& d_o, const TensorView& lse,
                                const TensorView& delta, const TensorView& dq, const TensorView& dk,
                                const TensorView& dv, KernelPath path, cudaStream_t stream);

// (o, lse) <- LSE-merge of (o, lse) and (o_in, lse_in); all four are contiguous fp32 arrays of
// count = batch * rows * heads rows (o: count x dim, lse: count).
cudaError_t LaunchMergePartial(float* o, float* lse, const float* o_in, const float* lse_in,
                               int64_t count, int32_t dim, cudaStream_t stream);

// acc[i] += in[i] for i < n (fp32 gradient partials).
cudaError_t LaunchAddInto(float* acc, const float* in, int64_t n, cudaStream_t stream);

// delta[b][r][h] = sum_e o[b][r][h][e] * d_o[b][r][h][e]; o fp32, d_o of `type`, both
// [batch][rows][heads][dim] contiguous, delta [batch][rows][heads].
cudaError_t LaunchDelta(InputType type, const float* o, const void* d_o, float* delta,
                        int64_t batch, int64_t rows, int32_t heads, int32_t dim,
                        cudaStream_t stream);

// Fills n elements of 4 bytes with the bit pattern of `value` (fp32 0, -inf, NaN poison).
cudaError_t LaunchFill(float* data, float value, int64_t n, cudaStream_t stream);

cudaError_t LaunchRowCopy(const RowCopy& c, cudaStream_t stream);

// Whether the tensor-core path would run this problem on the current device.
bool TensorCorePathSupports(const BlockProblem& p);

}  // namespace meshplan::exec::cuda
