// The device kernels that connect cuDNN's fused attention (executor/cuda/cudnn_attention.h) to
// the engine's accumulators. cuDNN computes one piece of a block, rows [row0, row0 + n) of the
// Q view against a key range, into temporaries of the input type; these kernels fold them into
// the fp32 accumulators, and prepare the inputs of cuDNN's backward from the engine's final LSE
// and delta. Plain C++ (no CUDA syntax). Every launcher only enqueues work on `stream`.
//
// Temporaries are dense: a "16-bit rows" buffer is [batch][n][heads][dim] of the input type
// (bf16 or fp16); a "stats" buffer is [batch][heads][n] fp32 (cuDNN's Stats layout).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "executor/device/kernel_args.h"

namespace meshplan::exec::cuda {

// One piece's rows of a view: rows [row0, row0 + n) and the global heads [head0, head0 + heads).
struct RowSlice {
  int64_t batch = 1;
  int64_t row0 = 0;
  int64_t n = 0;
  int32_t head0 = 0;
  int32_t heads = 0;
  int32_t dim = 0;
};

// (o, lse) of the slice <- LSE-merge of (o, lse) and the piece's (piece_o, piece_lse), as the
// own kernels fold a block (an accumulator with lse = -inf takes the piece as it is).
cudaError_t LaunchFoldPiece(InputType type, const RowSlice& s, const TensorView& o,
                            const TensorView& lse, const void* piece_o, const float* piece_lse,
                            cudaStream_t stream);

// For cuDNN's backward, which derives delta = rowsum(dO * O) from an O it is given: writes
// pseudo_o = alpha * dO per row with alpha = delta / |dO|^2 (0 where dO = 0), whose rowsum with dO
// is the engine's delta up to the rounding of pseudo_o to the input type, and stats = the slice's
// final lse. d_o is a 16-bit view, delta and lse fp32 views.
cudaError_t LaunchPrepareBackwardPiece(InputType type, const RowSlice& s, const TensorView& d_o,
                                       const TensorView& delta, const TensorView& lse,
                                       void* pseudo_o, float* stats, cudaStream_t stream);

// acc (an fp32 view) rows of the slice += piece (16-bit rows of the slice's shape).
cudaError_t LaunchAddPiece(InputType type, const RowSlice& s, const TensorView& acc,
                           const void* piece, cudaStream_t stream);

}  // namespace meshplan::exec::cuda
