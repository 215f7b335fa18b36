// Launchers of the two kernel families, called by the dispatch in launch.cu. Plain C++.
// Preconditions (checked by the dispatch): the problem is non-empty (batch, head_count, q.rows and
// k.rows positive) and the views are consistent with it.
#pragma once

#include <cstddef>

#include "executor/cuda/attention_kernels.h"

namespace meshplan::exec::cuda::kern {

// Tensor-core (WMMA) kernels: dim 64 or 128, sm_80+.
cudaError_t TcForward(const BlockProblem& p, const TensorView& q, const TensorView& k,
                      const TensorView& v, const TensorView& o, const TensorView& lse,
                      cudaStream_t stream);
cudaError_t TcBackward(const BlockProblem& p, const TensorView& q, const TensorView& k,
                       const TensorView& v, const TensorView& d_o, const TensorView& lse,
                       const TensorView& delta, const TensorView& dq, const TensorView& dk,
                       const TensorView& dv, cudaStream_t stream);
// Dynamic shared memory the tensor-core kernels need for head dim `dim` (0 when unsupported).
size_t TcForwardSharedBytes(int dim);
size_t TcBackwardSharedBytes(int dim);
// Testing hook: n >= 1 makes every later TcBackward split each KV head's query heads into n
// chunks (n CTAs per key tile, KV head and batch; dK/dV added with atomics when n > 1), whatever
// the device; 0 restores the automatic choice. For tests that must cover the unsplit and the
// unevenly split launches on any GPU; set it while no other thread launches. Returns the previous
// value.
int SetTcBackwardHeadSplitForTesting(int n);

// Portable fp32 SIMT kernels: any dim in [1, kSimtMaxDim].
constexpr int kSimtMaxDim = 256;
cudaError_t SimtForward(const BlockProblem& p, const TensorView& q, const TensorView& k,
                        const TensorView& v, const TensorView& o, const TensorView& lse,
                        cudaStream_t stream);
cudaError_t SimtBackward(const BlockProblem& p, const TensorView& q, const TensorView& k,
                         const TensorView& v, const TensorView& d_o, const TensorView& lse,
                         const TensorView& delta, const TensorView& dq, const TensorView& dk,
                         const TensorView& dv, cudaStream_t stream);

}  // namespace meshplan::exec::cuda::kern
