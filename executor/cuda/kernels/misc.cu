// Small device kernels of the GPU executor: LSE merge of partials, gradient accumulation, delta,
// fill and row copies. All grid-stride loops; a launch with nothing to do enqueues nothing.
#include <cstring>

#include "executor/cuda/kernels/common.cuh"

namespace meshplan::exec::cuda {
namespace {

using kern::GridFor;
using kern::NegInf;

constexpr int kThreads = 256;

// A warp per row: (o, lse) <- merge((o, lse), (o_in, lse_in)), as MergePartial on the CPU.
__global__ void MergePartialKernel(float* o, float* lse, const float* o_in, const float* lse_in,
                                   int64_t count, int32_t dim) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int64_t warps = int64_t{gridDim.x} * (blockDim.x / 32);
  for (int64_t row = (int64_t{blockIdx.x} * blockDim.x + threadIdx.x) / 32; row < count;
       row += warps) {
    const float a = lse[row];
    const float b = lse_in[row];
    if (b == NegInf()) continue;  // nothing to fold (the same in every lane)
    const bool fresh = a == NegInf();
    float merged, wa, wb;
    kern::MergeWeights(a, b, merged, wa, wb);
    float* const orow = o + row * dim;
    const float* const irow = o_in + row * dim;
    for (int e = lane; e < dim; e += 32) orow[e] = fresh ? irow[e] : wa * orow[e] + wb * irow[e];
    __syncwarp();  // every lane has read lse[row]
    if (lane == 0) lse[row] = merged;
  }
}

__global__ void AddIntoKernel(float* acc, const float* in, int64_t n) {
  const int64_t stride = int64_t{gridDim.x} * blockDim.x;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride)
    acc[i] += in[i];
}

// A warp per (b, r, h) row: delta = sum_e o * d_o.
template <typename T>
__global__ void DeltaKernel(const float* o, const T* d_o, float* delta, int64_t rows, int32_t dim) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int64_t warps = int64_t{gridDim.x} * (blockDim.x / 32);
  for (int64_t row = (int64_t{blockIdx.x} * blockDim.x + threadIdx.x) / 32; row < rows;
       row += warps) {
    float sum = 0.0f;
    for (int e = lane; e < dim; e += 32)
      sum += o[row * dim + e] * kern::ToFloat(d_o[row * dim + e]);
    sum = kern::WarpSum(sum);
    if (lane == 0) delta[row] = sum;
  }
}

__global__ void FillKernel(uint32_t* data, uint32_t bits, int64_t n) {
  const int64_t stride = int64_t{gridDim.x} * blockDim.x;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride)
    data[i] = bits;
}

// Copies rows in units U (2, 4 or 16 bytes); `units` per (row, head) = dim * elem_bytes /
// sizeof(U).
template <typename U>
__global__ void RowCopyKernel(const RowCopy c, int64_t units) {
  const U* const src = static_cast<const U*>(c.src);
  U* const dst = static_cast<U*>(c.dst);
  const int64_t total = c.batch * c.count * c.copy_heads * units;
  const int64_t stride = int64_t{gridDim.x} * blockDim.x;
  for (int64_t t = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; t < total; t += stride) {
    int64_t rest = t;
    const int64_t u = rest % units;
    rest /= units;
    const int64_t hh = rest % c.copy_heads;
    rest /= c.copy_heads;
    const int64_t i = rest % c.count;
    const int64_t b = rest / c.count;
    const int64_t src_row = c.src_rows != nullptr ? c.src_rows[i] : c.src_row0 + i;
    const int64_t s =
        ((b * c.src_rows_total + src_row) * c.src_heads + c.src_head0 + hh) * units + u;
    const int64_t d =
        ((b * c.dst_rows_total + c.dst_row0 + i) * c.dst_heads + c.dst_head0 + hh) * units + u;
    dst[d] = src[s];
  }
}

bool Aligned(const void* p, uintptr_t bytes) {
  return (reinterpret_cast<uintptr_t>(p) % bytes) == 0;
}

}  // namespace

cudaError_t LaunchMergePartial(float* o, float* lse, const float* o_in, const float* lse_in,
                               int64_t count, int32_t dim, cudaStream_t stream) {
  if (count < 0 || dim < 0) return cudaErrorInvalidValue;
  if (count == 0) return cudaSuccess;
  MergePartialKernel<<<GridFor(count * 32, kThreads), kThreads, 0, stream>>>(o, lse, o_in, lse_in,
                                                                             count, dim);
  return cudaGetLastError();
}

cudaError_t LaunchAddInto(float* acc, const float* in, int64_t n, cudaStream_t stream) {
  if (n < 0) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  AddIntoKernel<<<GridFor(n, kThreads), kThreads, 0, stream>>>(acc, in, n);
  return cudaGetLastError();
}

cudaError_t LaunchDelta(InputType type, const float* o, const void* d_o, float* delta,
                        int64_t batch, int64_t rows, int32_t heads, int32_t dim,
                        cudaStream_t stream) {
  if (batch < 0 || rows < 0 || heads < 0 || dim < 0) return cudaErrorInvalidValue;
  const int64_t count = batch * rows * heads;
  if (count == 0) return cudaSuccess;
  const unsigned grid = GridFor(count * 32, kThreads);
  if (type == InputType::kBf16) {
    DeltaKernel<<<grid, kThreads, 0, stream>>>(o, static_cast<const __nv_bfloat16*>(d_o), delta,
                                               count, dim);
  } else {
    DeltaKernel<<<grid, kThreads, 0, stream>>>(o, static_cast<const __half*>(d_o), delta, count,
                                               dim);
  }
  return cudaGetLastError();
}

cudaError_t LaunchFill(float* data, float value, int64_t n, cudaStream_t stream) {
  if (n < 0) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  uint32_t bits;
  static_assert(sizeof(bits) == sizeof(value));
  std::memcpy(&bits, &value, sizeof(bits));
  FillKernel<<<GridFor(n, kThreads), kThreads, 0, stream>>>(reinterpret_cast<uint32_t*>(data), bits,
                                                            n);
  return cudaGetLastError();
}

cudaError_t LaunchRowCopy(const RowCopy& c, cudaStream_t stream) {
  if (c.elem_bytes != 2 && c.elem_bytes != 4) return cudaErrorInvalidValue;
  if (c.batch < 0 || c.count < 0 || c.copy_heads < 0 || c.dim < 0) return cudaErrorInvalidValue;
  const int64_t row_bytes = int64_t{c.dim} * c.elem_bytes;
  if (c.batch == 0 || c.count == 0 || c.copy_heads == 0 || row_bytes == 0) return cudaSuccess;
  // Whole 16-byte units when every (row, head) slice starts 16-byte aligned: slices are
  // row_bytes apart, so that holds when row_bytes and both bases are multiples of 16.
  if (row_bytes % 16 == 0 && Aligned(c.src, 16) && Aligned(c.dst, 16)) {
    const int64_t units = row_bytes / 16;
    RowCopyKernel<uint4>
        <<<GridFor(c.batch * c.count * c.copy_heads * units, kThreads), kThreads, 0, stream>>>(
            c, units);
  } else if (c.elem_bytes == 4) {
    RowCopyKernel<uint32_t>
        <<<GridFor(c.batch * c.count * c.copy_heads * c.dim, kThreads), kThreads, 0, stream>>>(
            c, c.dim);
  } else {
    RowCopyKernel<uint16_t>
        <<<GridFor(c.batch * c.count * c.copy_heads * c.dim, kThreads), kThreads, 0, stream>>>(
            c, c.dim);
  }
  return cudaGetLastError();
}

}  // namespace meshplan::exec::cuda
