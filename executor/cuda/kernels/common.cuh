// Device helpers shared by the attention kernels: element conversion, tensor-view addressing, mask
// visibility and tile classification. Included by the .cu files of this directory only.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "core/sequence/mask_rule.h"
#include "executor/cuda/attention_kernels.h"

namespace meshplan::exec::cuda::kern {

constexpr unsigned kFullMask = 0xffffffffu;

// Launches `kernel(args)` with `bytes` of dynamic shared memory on `stream`. Above 48 KB a kernel
// needs the opt-in attribute, which is per function and device. It is set at every launch: a
// cached "done" flag has to be keyed by the kernel itself (one flag per Args type, as before, let
// the second kernel with the same argument struct launch without it and fail with "invalid
// argument", seen on an H100), and the call costs about a microsecond against block launches of
// tens of microseconds and more.
template <typename Args>
cudaError_t LaunchWithSharedMemory(void (*kernel)(Args), int64_t blocks, int threads, size_t bytes,
                                   cudaStream_t stream, const Args& args) {
  if (bytes > 48 * 1024) {
    const cudaError_t err = cudaFuncSetAttribute(
        kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
    if (err != cudaSuccess) return err;
  }
  kernel<<<static_cast<unsigned>(blocks), threads, bytes, stream>>>(args);
  return cudaGetLastError();
}

__device__ __forceinline__ float NegInf() { return __int_as_float(0xff800000); }

// ---- 16-bit element types ----

template <typename T>
__device__ __forceinline__ float ToFloat(T x);
template <>
__device__ __forceinline__ float ToFloat<__nv_bfloat16>(__nv_bfloat16 x) {
  return __bfloat162float(x);
}
template <>
__device__ __forceinline__ float ToFloat<__half>(__half x) {
  return __half2float(x);
}

template <typename T>
__device__ __forceinline__ T FromFloat(float x);
template <>
__device__ __forceinline__ __nv_bfloat16 FromFloat<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}
template <>
__device__ __forceinline__ __half FromFloat<__half>(float x) {
  return __float2half_rn(x);
}

// ---- Addressing of [batch][rows][heads][dim] views ----

// Index of the (b, r, global head h) row of a view; multiply by dim for the element offset.
__device__ __forceinline__ int64_t RowIndex(const TensorView& t, int64_t b, int64_t r, int32_t h) {
  return (b * t.rows + r) * t.heads + (h - t.head_begin);
}

// Token position of row r (the row index itself when the view carries no positions).
__device__ __forceinline__ int64_t Pos(const int64_t* positions, int64_t r) {
  return positions != nullptr ? positions[r] : r;
}

// ---- Warp reductions ----

__device__ __forceinline__ float WarpSum(float x) {
  for (int off = 16; off > 0; off >>= 1) x += __shfl_xor_sync(kFullMask, x, off);
  return x;
}

// Minimum and maximum of pos[0, n) for 1 <= n <= 64, over the lanes of one warp (every lane gets
// the result).
__device__ __forceinline__ void WarpMinMax64(const int64_t* pos, int n, int64_t& lo, int64_t& hi) {
  const int lane = static_cast<int>(threadIdx.x & 31);
  long long mn = INT64_MAX, mx = INT64_MIN;
  for (int i = lane; i < n; i += 32) {
    const long long p = pos[i];
    mn = p < mn ? p : mn;
    mx = p > mx ? p : mx;
  }
  for (int off = 16; off > 0; off >>= 1) {
    const long long a = __shfl_xor_sync(kFullMask, mn, off);
    const long long b = __shfl_xor_sync(kFullMask, mx, off);
    mn = a < mn ? a : mn;
    mx = b > mx ? b : mx;
  }
  lo = mn;
  hi = mx;
}

// ---- Mask ----

// Document index of token t: the index of the last doc_starts[i] <= t (binary search).
__device__ __forceinline__ int32_t DocOf(const DeviceMask& m, int64_t t) {
  int32_t lo = 0, hi = m.num_docs;  // first i with doc_starts[i] > t lies in [lo, hi]
  while (lo < hi) {
    const int32_t mid = lo + (hi - lo) / 2;
    if (m.doc_starts[mid] <= t) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo - 1;
}

// The rule's view of a device mask (core/sequence/mask_rule.h).
__device__ __forceinline__ MaskParams ParamsOf(const DeviceMask& m) { return m.params; }

// Visibility of (query position q, key position k); see DeviceMask.
__device__ __forceinline__ bool Visible(const DeviceMask& m, int64_t q, int64_t k) {
  return meshplan::Visible(ParamsOf(m), q, k, [&m](int64_t t) { return DocOf(m, t); });
}

// Whether the mask needs document indices (then VisibleWithDocs wants them precomputed).
__device__ __forceinline__ bool HasDocs(const DeviceMask& m) { return HasDocuments(m.params.kind); }

// Visible() with the document indices of q and k precomputed (read by the document kinds only).
__device__ __forceinline__ bool VisibleWithDocs(const DeviceMask& m, int64_t q, int64_t k,
                                                int32_t q_doc, int32_t k_doc) {
  return VisibleInDocuments(ParamsOf(m), q, k, q_doc, k_doc);
}

// How much of a (query tile, key tile) pair the mask leaves visible, from the position ranges of
// the tiles' valid rows alone (as Classify in executor/kernels/block_kernels.cc).
enum TileVisibility : int { kTileNone = 0, kTileAll = 1, kTilePartial = 2 };

__device__ __forceinline__ int ClassifyTile(const DeviceMask& m, int64_t q_lo, int64_t q_hi,
                                            int64_t k_lo, int64_t k_hi) {
  const MaskParams params = ParamsOf(m);
  const auto doc_of = [&m](int64_t t) { return DocOf(m, t); };
  if (NoneVisible(params, q_lo, q_hi, k_lo, k_hi, doc_of)) return kTileNone;
  return AllVisible(params, q_lo, q_hi, k_lo, k_hi, doc_of) ? kTileAll : kTilePartial;
}

// (lse, o) fold weights of the LSE merge of accumulator lse `a` with a block lse `b` (finite):
// result lse `merged`, o' = wa * o + wb * o_blk; wa = 0 (and o must not be read) when a = -inf.
__device__ __forceinline__ void MergeWeights(float a, float b, float& merged, float& wa,
                                             float& wb) {
  if (a == NegInf()) {
    merged = b;
    wa = 0.0f;
    wb = 1.0f;
    return;
  }
  const float m = fmaxf(a, b);
  merged = m + logf(expf(a - m) + expf(b - m));
  wa = expf(a - merged);
  wb = expf(b - merged);
}

// Grid size for grid-stride kernels over n items with `threads` per block.
inline unsigned GridFor(int64_t n, int threads) {
  const int64_t blocks = (n + threads - 1) / threads;
  return static_cast<unsigned>(blocks < 65535 ? blocks : 65535);
}

}  // namespace meshplan::exec::cuda::kern
