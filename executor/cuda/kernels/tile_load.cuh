// Global -> shared staging of row tiles for the tensor-core kernels.
#pragma once

#include <cstdint>

#include "executor/cuda/kernels/common.cuh"

namespace meshplan::exec::cuda::kern {

// Whether 16-byte vector loads are valid for a view: every row of a [batch][rows][heads][dim]
// view with dim a multiple of 8 (16-bit elements) starts at a multiple of 16 bytes from the base,
// so only the base pointer matters.
inline bool Aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

// Copies rows [r0, r0 + rows_valid) of head `head` (global index) of `view`, batch b, into the
// shared tile dst[ROWS][ld] (elements), zero-filling rows rows_valid..ROWS-1. Called by all
// THREADS threads of the block. `vec`: 16-byte loads (the view's base is 16-byte aligned, D % 8
// == 0, and dst rows are 16-byte aligned: ld % 8 == 0).
template <typename T, int D, int ROWS, int THREADS>
__device__ __forceinline__ void LoadRows(T* dst, int ld, const TensorView& view, int64_t b,
                                         int64_t r0, int32_t head, int rows_valid, bool vec) {
  static_assert(D % 8 == 0, "rows must be whole 16-byte chunks");
  const T* src = static_cast<const T*>(view.data);
  if (vec) {
    constexpr int kChunks = D / 8;  // 16-byte chunks per row
    for (int c = static_cast<int>(threadIdx.x); c < ROWS * kChunks; c += THREADS) {
      const int row = c / kChunks;
      const int col = (c % kChunks) * 8;
      uint4 val = make_uint4(0u, 0u, 0u, 0u);
      if (row < rows_valid) {
        val = *reinterpret_cast<const uint4*>(src + RowIndex(view, b, r0 + row, head) * D + col);
      }
      *reinterpret_cast<uint4*>(dst + row * ld + col) = val;
    }
  } else {
    for (int c = static_cast<int>(threadIdx.x); c < ROWS * D; c += THREADS) {
      const int row = c / D;
      const int col = c % D;
      dst[row * ld + col] =
          row < rows_valid ? src[RowIndex(view, b, r0 + row, head) * D + col] : FromFloat<T>(0.0f);
    }
  }
}

// Rounds n up to a multiple of a.
constexpr size_t RoundUp(size_t n, size_t a) { return (n + a - 1) / a * a; }
constexpr size_t MaxOf(size_t a, size_t b) { return a > b ? a : b; }

}  // namespace meshplan::exec::cuda::kern
