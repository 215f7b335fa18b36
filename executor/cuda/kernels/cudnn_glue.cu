// Kernels between cuDNN's fused attention and the engine's fp32 accumulators
// (executor/cuda/cudnn_glue.h). A warp per (batch, row, head) row of the slice, grid-stride.
#include "executor/cuda/cudnn_glue.h"
#include "executor/cuda/kernels/common.cuh"

namespace meshplan::exec::cuda {
namespace {

using kern::GridFor;
using kern::NegInf;

constexpr int kThreads = 256;

// Row t of the slice's (batch, row, head) rows, in [batch][n][heads] order.
struct SliceRow {
  int64_t b, i;
  int32_t hh;
};
__device__ __forceinline__ SliceRow RowOf(const RowSlice& s, int64_t t) {
  const int32_t hh = static_cast<int32_t>(t % s.heads);
  t /= s.heads;
  return {t / s.n, t % s.n, hh};
}

template <typename T>
__global__ void FoldPieceKernel(const RowSlice s, const TensorView o, const TensorView lse,
                                const T* piece_o, const float* piece_lse) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int64_t count = s.batch * s.n * s.heads;
  const int64_t warps = int64_t{gridDim.x} * (blockDim.x / 32);
  for (int64_t t = (int64_t{blockIdx.x} * blockDim.x + threadIdx.x) / 32; t < count; t += warps) {
    const SliceRow r = RowOf(s, t);
    const float b_lse = piece_lse[(r.b * s.heads + r.hh) * s.n + r.i];
    if (!(b_lse > NegInf())) continue;  // the piece hides every key from this row
    const int32_t h = s.head0 + r.hh;
    float* const lg = static_cast<float*>(lse.data) + kern::RowIndex(lse, r.b, s.row0 + r.i, h);
    float* const og = static_cast<float*>(o.data) + kern::RowIndex(o, r.b, s.row0 + r.i, h) * s.dim;
    const T* const src = piece_o + t * s.dim;
    const float acc = *lg;
    const bool fresh = acc == NegInf();
    float merged, wa, wb;
    kern::MergeWeights(acc, b_lse, merged, wa, wb);
    for (int e = lane; e < s.dim; e += 32) {
      const float ob = kern::ToFloat(src[e]);
      og[e] = fresh ? ob : wa * og[e] + wb * ob;  // fresh: the old o is never read (may be poison)
    }
    __syncwarp();  // every lane has read *lg
    if (lane == 0) *lg = merged;
  }
}

template <typename T>
__global__ void PrepareBackwardKernel(const RowSlice s, const TensorView d_o,
                                      const TensorView delta, const TensorView lse, T* pseudo_o,
                                      float* stats) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int64_t count = s.batch * s.n * s.heads;
  const int64_t warps = int64_t{gridDim.x} * (blockDim.x / 32);
  for (int64_t t = (int64_t{blockIdx.x} * blockDim.x + threadIdx.x) / 32; t < count; t += warps) {
    const SliceRow r = RowOf(s, t);
    const int32_t h = s.head0 + r.hh;
    const T* const g =
        static_cast<const T*>(d_o.data) + kern::RowIndex(d_o, r.b, s.row0 + r.i, h) * s.dim;
    float norm2 = 0.0f;
    for (int e = lane; e < s.dim; e += 32) {
      const float x = kern::ToFloat(g[e]);
      norm2 += x * x;
    }
    norm2 = kern::WarpSum(norm2);
    const float d =
        static_cast<const float*>(delta.data)[kern::RowIndex(delta, r.b, s.row0 + r.i, h)];
    const float alpha = norm2 > 0.0f ? d / norm2 : 0.0f;
    T* const out = pseudo_o + t * s.dim;
    for (int e = lane; e < s.dim; e += 32) out[e] = kern::FromFloat<T>(alpha * kern::ToFloat(g[e]));
    if (lane == 0) {
      stats[(r.b * s.heads + r.hh) * s.n + r.i] =
          static_cast<const float*>(lse.data)[kern::RowIndex(lse, r.b, s.row0 + r.i, h)];
    }
  }
}

template <typename T>
__global__ void AddPieceKernel(const RowSlice s, const TensorView acc, const T* piece) {
  const int64_t total = s.batch * s.n * s.heads * s.dim;
  const int64_t stride = int64_t{gridDim.x} * blockDim.x;
  for (int64_t x = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; x < total; x += stride) {
    const int32_t e = static_cast<int32_t>(x % s.dim);
    const SliceRow r = RowOf(s, x / s.dim);
    float* const dst = static_cast<float*>(acc.data) +
                       kern::RowIndex(acc, r.b, s.row0 + r.i, s.head0 + r.hh) * s.dim;
    dst[e] += kern::ToFloat(piece[x]);
  }
}

bool Valid(const RowSlice& s) {
  return s.batch >= 0 && s.row0 >= 0 && s.n >= 0 && s.heads >= 0 && s.dim > 0;
}
bool Empty(const RowSlice& s) { return s.batch == 0 || s.n == 0 || s.heads == 0; }

}  // namespace

cudaError_t LaunchFoldPiece(InputType type, const RowSlice& s, const TensorView& o,
                            const TensorView& lse, const void* piece_o, const float* piece_lse,
                            cudaStream_t stream) {
  if (!Valid(s) || type == InputType::kFp32) return cudaErrorInvalidValue;
  if (Empty(s)) return cudaSuccess;
  const unsigned grid = GridFor(s.batch * s.n * s.heads * 32, kThreads);
  if (type == InputType::kBf16) {
    FoldPieceKernel<<<grid, kThreads, 0, stream>>>(
        s, o, lse, static_cast<const __nv_bfloat16*>(piece_o), piece_lse);
  } else {
    FoldPieceKernel<<<grid, kThreads, 0, stream>>>(s, o, lse, static_cast<const __half*>(piece_o),
                                                   piece_lse);
  }
  return cudaGetLastError();
}

cudaError_t LaunchPrepareBackwardPiece(InputType type, const RowSlice& s, const TensorView& d_o,
                                       const TensorView& delta, const TensorView& lse,
                                       void* pseudo_o, float* stats, cudaStream_t stream) {
  if (!Valid(s) || type == InputType::kFp32) return cudaErrorInvalidValue;
  if (Empty(s)) return cudaSuccess;
  const unsigned grid = GridFor(s.batch * s.n * s.heads * 32, kThreads);
  if (type == InputType::kBf16) {
    PrepareBackwardKernel<<<grid, kThreads, 0, stream>>>(
        s, d_o, delta, lse, static_cast<__nv_bfloat16*>(pseudo_o), stats);
  } else {
    PrepareBackwardKernel<<<grid, kThreads, 0, stream>>>(s, d_o, delta, lse,
                                                         static_cast<__half*>(pseudo_o), stats);
  }
  return cudaGetLastError();
}

cudaError_t LaunchAddPiece(InputType type, const RowSlice& s, const TensorView& acc,
                           const void* piece, cudaStream_t stream) {
  if (!Valid(s) || type == InputType::kFp32) return cudaErrorInvalidValue;
  if (Empty(s)) return cudaSuccess;
  const unsigned grid = GridFor(s.batch * s.n * s.heads * s.dim, kThreads);
  if (type == InputType::kBf16) {
    AddPieceKernel<<<grid, kThreads, 0, stream>>>(s, acc, static_cast<const __nv_bfloat16*>(piece));
  } else {
    AddPieceKernel<<<grid, kThreads, 0, stream>>>(s, acc, static_cast<const __half*>(piece));
  }
  return cudaGetLastError();
}

}  // namespace meshplan::exec::cuda
