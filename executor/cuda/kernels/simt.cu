// Portable SIMT kernels (any arch, any head dim up to 256): fp32 math on inputs converted from
// bf16/fp16, one warp per row, lane l holding elements l, l + 32, ... of the row (E per lane).
// They are the fallback of the tensor-core kernels and their independent check on a GPU, so they
// stay as plain as possible: the mask is evaluated per pair with Visible() and no tile is skipped.
//
// Forward: CTA of 8 warps = 8 query rows of one (query head, batch element); key/value tiles of
//   16 rows staged in shared memory as fp32; per key an online-softmax update; at the end the
//   LSE merge into (o, lse).
// Backward: two kernels, no atomics. dK/dV: a warp per key row (8 per CTA, one KV head), looping
//   over the computed query heads of its group and all query rows (staged 16 at a time); dQ: a
//   warp per query row, looping over all keys. Each output row is written by exactly one warp.
#include "executor/cuda/kernels/common.cuh"
#include "executor/cuda/kernels/internal.h"

namespace meshplan::exec::cuda::kern {
namespace {

constexpr int kWarps = 8;
constexpr int kThreads = 32 * kWarps;
constexpr int kTile = 16;  // rows staged in shared memory per step

// Dynamic shared memory: kTile positions (int64), 2 * kTile floats (lse, delta), two kTile x dim
// fp32 tiles.
size_t SharedBytes(int dim) { return kTile * 8 + 2 * kTile * 4 + 2 * size_t{kTile} * dim * 4; }

struct SimtArgs {
  BlockProblem p;
  TensorView q, k, v, o, lse;         // forward
  TensorView d_o, delta, dq, dk, dv;  // backward (lse shared)
  int64_t n_rt;                       // row tiles of kWarps rows
  int32_t kv_first, n_kv;             // backward dK/dV: KV heads
};

struct Smem {
  int64_t* pos;
  float* lse;
  float* delta;
  float* a;  // kTile x dim
  float* b;  // kTile x dim
};

__device__ __forceinline__ Smem Carve(unsigned char* smem, int dim) {
  Smem s;
  s.pos = reinterpret_cast<int64_t*>(smem);
  s.lse = reinterpret_cast<float*>(smem + kTile * 8);
  s.delta = s.lse + kTile;
  s.a = s.delta + kTile;
  s.b = s.a + kTile * dim;
  return s;
}

// Loads element e < dim of row r of `view` (head h, batch b) as float; 0 when e >= dim.
template <typename T>
__device__ __forceinline__ float LoadElem(const TensorView& view, int64_t b, int64_t r, int32_t h,
                                          int e, int dim) {
  return e < dim ? ToFloat(static_cast<const T*>(view.data)[RowIndex(view, b, r, h) * dim + e])
                 : 0.0f;
}

// Stages rows [r0, r0 + n) (n <= kTile) of x and y (head h) as fp32 into dst_x, dst_y
// [kTile][dim]; rows n.. are zero.
template <typename T>
__device__ __forceinline__ void StageTile(float* dst_x, float* dst_y, const TensorView& x,
                                          const TensorView& y, int64_t b, int64_t r0, int n,
                                          int32_t h, int dim) {
  for (int i = static_cast<int>(threadIdx.x); i < kTile * dim; i += kThreads) {
    const int r = i / dim;
    const int e = i % dim;
    dst_x[i] = r < n ? LoadElem<T>(x, b, r0 + r, h, e, dim) : 0.0f;
    dst_y[i] = r < n ? LoadElem<T>(y, b, r0 + r, h, e, dim) : 0.0f;
  }
}

template <typename T, int E>
__global__ void __launch_bounds__(kThreads) SimtForwardKernel(const SimtArgs a) {
  extern __shared__ __align__(16) unsigned char smem[];
  const BlockProblem& p = a.p;
  const int dim = p.dim;
  const Smem s = Carve(smem, dim);
  const int warp = static_cast<int>(threadIdx.x) >> 5;
  const int lane = static_cast<int>(threadIdx.x) & 31;

  int64_t idx = blockIdx.x;
  const int64_t rt = idx % a.n_rt;
  idx /= a.n_rt;
  const int32_t h = p.head_begin + static_cast<int32_t>(idx % p.head_count);
  const int64_t b = idx / p.head_count;
  const int32_t kvh = h / p.group_size;
  const int64_t nq = a.q.rows;
  const int64_t nk = a.k.rows;
  const int64_t row = rt * kWarps + warp;
  const bool row_ok = row < nq;

  float qv[E], ov[E];
#pragma unroll
  for (int i = 0; i < E; ++i) {
    qv[i] = row_ok ? LoadElem<T>(a.q, b, row, h, lane + 32 * i, dim) : 0.0f;
    ov[i] = 0.0f;
  }
  const int64_t qp = row_ok ? Pos(a.q.positions, row) : 0;
  float m = NegInf(), l = 0.0f;

  for (int64_t k0 = 0; k0 < nk; k0 += kTile) {
    const int n = static_cast<int>(nk - k0 < kTile ? nk - k0 : kTile);
    __syncthreads();
    StageTile<T>(s.a, s.b, a.k, a.v, b, k0, n, kvh, dim);
    for (int i = static_cast<int>(threadIdx.x); i < kTile; i += kThreads)
      s.pos[i] = i < n ? Pos(a.k.positions, k0 + i) : 0;
    __syncthreads();
    if (!row_ok) continue;
    for (int j = 0; j < n; ++j) {
      if (!Visible(p.mask, qp, s.pos[j])) continue;  // the same in every lane
      float dot = 0.0f;
#pragma unroll
      for (int i = 0; i < E; ++i) {
        const int e = lane + 32 * i;
        if (e < dim) dot += qv[i] * s.a[j * dim + e];
      }
      const float sc = WarpSum(dot) * p.scale;
      const float m_new = fmaxf(m, sc);
      const float alpha = expf(m - m_new);  // m = -inf: 0 (m_new is finite)
      const float pr = expf(sc - m_new);
      l = l * alpha + pr;
#pragma unroll
      for (int i = 0; i < E; ++i) {
        const int e = lane + 32 * i;
        if (e < dim) ov[i] = ov[i] * alpha + pr * s.b[j * dim + e];
      }
      m = m_new;
    }
  }
  if (!row_ok || !(l > 0.0f)) return;  // no visible key: lse_blk = -inf, nothing to fold

  const float lse_blk = m + logf(l);
  float* const og = static_cast<float*>(a.o.data) + RowIndex(a.o, b, row, h) * dim;
  float* const lg = static_cast<float*>(a.lse.data) + RowIndex(a.lse, b, row, h);
  const float acc = *lg;
  const bool fresh = acc == NegInf();
  float merged, wa, wb;
  MergeWeights(acc, lse_blk, merged, wa, wb);
#pragma unroll
  for (int i = 0; i < E; ++i) {
    const int e = lane + 32 * i;
    if (e < dim) {
      const float ob = ov[i] / l;
      og[e] = fresh ? ob : wa * og[e] + wb * ob;
    }
  }
  __syncwarp();  // every lane has read *lg
  if (lane == 0) *lg = merged;
}

// dK, dV: a warp per key row.
template <typename T, int E>
__global__ void __launch_bounds__(kThreads) SimtBackwardKvKernel(const SimtArgs a) {
  extern __shared__ __align__(16) unsigned char smem[];
  const BlockProblem& p = a.p;
  const int dim = p.dim;
  const Smem s = Carve(smem, dim);  // a: Q rows, b: dO rows
  const int warp = static_cast<int>(threadIdx.x) >> 5;
  const int lane = static_cast<int>(threadIdx.x) & 31;

  int64_t idx = blockIdx.x;
  const int64_t rt = idx % a.n_rt;
  idx /= a.n_rt;
  const int32_t kvh = a.kv_first + static_cast<int32_t>(idx % a.n_kv);
  const int64_t b = idx / a.n_kv;
  const int32_t g = p.group_size;
  const int32_t h_begin = max(p.head_begin, kvh * g);
  const int32_t h_end = min(p.head_begin + p.head_count, (kvh + 1) * g);
  const int64_t nq = a.q.rows;
  const int64_t nk = a.k.rows;
  const int64_t j = rt * kWarps + warp;  // key row
  const bool key_ok = j < nk;

  float kv[E], vv[E], dkv[E], dvv[E];
#pragma unroll
  for (int i = 0; i < E; ++i) {
    kv[i] = key_ok ? LoadElem<T>(a.k, b, j, kvh, lane + 32 * i, dim) : 0.0f;
    vv[i] = key_ok ? LoadElem<T>(a.v, b, j, kvh, lane + 32 * i, dim) : 0.0f;
    dkv[i] = 0.0f;
    dvv[i] = 0.0f;
  }
  const int64_t kp = key_ok ? Pos(a.k.positions, j) : 0;
  const float* const lse_data = static_cast<const float*>(a.lse.data);
  const float* const delta_data = static_cast<const float*>(a.delta.data);

  for (int32_t h = h_begin; h < h_end; ++h) {
    for (int64_t q0 = 0; q0 < nq; q0 += kTile) {
      const int n = static_cast<int>(nq - q0 < kTile ? nq - q0 : kTile);
      __syncthreads();
      StageTile<T>(s.a, s.b, a.q, a.d_o, b, q0, n, h, dim);
      for (int i = static_cast<int>(threadIdx.x); i < kTile; i += kThreads) {
        s.pos[i] = i < n ? Pos(a.q.positions, q0 + i) : 0;
        s.lse[i] = i < n ? lse_data[RowIndex(a.lse, b, q0 + i, h)] : NegInf();
        s.delta[i] = i < n ? delta_data[RowIndex(a.delta, b, q0 + i, h)] : 0.0f;
      }
      __syncthreads();
      if (!key_ok) continue;
      for (int r = 0; r < n; ++r) {
        const float lse_r = s.lse[r];
        if (lse_r == NegInf() || !Visible(p.mask, s.pos[r], kp)) continue;  // P = 0
        float qk = 0.0f, dov = 0.0f;
#pragma unroll
        for (int i = 0; i < E; ++i) {
          const int e = lane + 32 * i;
          if (e < dim) {
            qk += s.a[r * dim + e] * kv[i];
            dov += s.b[r * dim + e] * vv[i];
          }
        }
        const float pr = expf(p.scale * WarpSum(qk) - lse_r);
        const float ds = pr * (WarpSum(dov) - s.delta[r]);
#pragma unroll
        for (int i = 0; i < E; ++i) {
          const int e = lane + 32 * i;
          if (e < dim) {
            dvv[i] += pr * s.b[r * dim + e];
            dkv[i] += p.scale * ds * s.a[r * dim + e];
          }
        }
      }
    }
  }
  if (!key_ok) return;
  float* const dkg = static_cast<float*>(a.dk.data) + RowIndex(a.dk, b, j, kvh) * dim;
  float* const dvg = static_cast<float*>(a.dv.data) + RowIndex(a.dv, b, j, kvh) * dim;
#pragma unroll
  for (int i = 0; i < E; ++i) {
    const int e = lane + 32 * i;
    if (e < dim) {
      dkg[e] += dkv[i];
      dvg[e] += dvv[i];
    }
  }
}

// dQ: a warp per query row.
template <typename T, int E>
__global__ void __launch_bounds__(kThreads) SimtBackwardQKernel(const SimtArgs a) {
  extern __shared__ __align__(16) unsigned char smem[];
  const BlockProblem& p = a.p;
  const int dim = p.dim;
  const Smem s = Carve(smem, dim);  // a: K rows, b: V rows
  const int warp = static_cast<int>(threadIdx.x) >> 5;
  const int lane = static_cast<int>(threadIdx.x) & 31;

  int64_t idx = blockIdx.x;
  const int64_t rt = idx % a.n_rt;
  idx /= a.n_rt;
  const int32_t h = p.head_begin + static_cast<int32_t>(idx % p.head_count);
  const int64_t b = idx / p.head_count;
  const int32_t kvh = h / p.group_size;
  const int64_t nq = a.q.rows;
  const int64_t nk = a.k.rows;
  const int64_t row = rt * kWarps + warp;
  const bool row_ok = row < nq;

  float qv[E], dov[E], dqv[E];
#pragma unroll
  for (int i = 0; i < E; ++i) {
    qv[i] = row_ok ? LoadElem<T>(a.q, b, row, h, lane + 32 * i, dim) : 0.0f;
    dov[i] = row_ok ? LoadElem<T>(a.d_o, b, row, h, lane + 32 * i, dim) : 0.0f;
    dqv[i] = 0.0f;
  }
  const int64_t qp = row_ok ? Pos(a.q.positions, row) : 0;
  const float lse_r =
      row_ok ? static_cast<const float*>(a.lse.data)[RowIndex(a.lse, b, row, h)] : NegInf();
  const float delta_r =
      row_ok ? static_cast<const float*>(a.delta.data)[RowIndex(a.delta, b, row, h)] : 0.0f;
  const bool active = row_ok && lse_r != NegInf();  // lse = -inf: P = 0, no gradient

  for (int64_t k0 = 0; k0 < nk; k0 += kTile) {
    const int n = static_cast<int>(nk - k0 < kTile ? nk - k0 : kTile);
    __syncthreads();
    StageTile<T>(s.a, s.b, a.k, a.v, b, k0, n, kvh, dim);
    for (int i = static_cast<int>(threadIdx.x); i < kTile; i += kThreads)
      s.pos[i] = i < n ? Pos(a.k.positions, k0 + i) : 0;
    __syncthreads();
    if (!active) continue;
    for (int jj = 0; jj < n; ++jj) {
      if (!Visible(p.mask, qp, s.pos[jj])) continue;
      float qk = 0.0f, dv = 0.0f;
#pragma unroll
      for (int i = 0; i < E; ++i) {
        const int e = lane + 32 * i;
        if (e < dim) {
          qk += qv[i] * s.a[jj * dim + e];
          dv += dov[i] * s.b[jj * dim + e];
        }
      }
      const float pr = expf(p.scale * WarpSum(qk) - lse_r);
      const float ds = pr * (WarpSum(dv) - delta_r);
#pragma unroll
      for (int i = 0; i < E; ++i) {
        const int e = lane + 32 * i;
        if (e < dim) dqv[i] += p.scale * ds * s.a[jj * dim + e];
      }
    }
  }
  if (!active) return;
  float* const dqg = static_cast<float*>(a.dq.data) + RowIndex(a.dq, b, row, h) * dim;
#pragma unroll
  for (int i = 0; i < E; ++i) {
    const int e = lane + 32 * i;
    if (e < dim) dqg[e] += dqv[i];
  }
}

template <typename T, int E>
cudaError_t LaunchForward(const SimtArgs& a, int64_t blocks, cudaStream_t stream) {
  SimtForwardKernel<T, E>
      <<<static_cast<unsigned>(blocks), kThreads, SharedBytes(a.p.dim), stream>>>(a);
  return cudaGetLastError();
}

template <typename T, int E>
cudaError_t LaunchBackward(const SimtArgs& a, int64_t kv_blocks, int64_t q_blocks, int64_t n_kv_rt,
                           int64_t n_q_rt, cudaStream_t stream) {
  SimtArgs kv_args = a;
  kv_args.n_rt = n_kv_rt;
  SimtBackwardKvKernel<T, E>
      <<<static_cast<unsigned>(kv_blocks), kThreads, SharedBytes(a.p.dim), stream>>>(kv_args);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return err;
  SimtArgs q_args = a;
  q_args.n_rt = n_q_rt;
  SimtBackwardQKernel<T, E>
      <<<static_cast<unsigned>(q_blocks), kThreads, SharedBytes(a.p.dim), stream>>>(q_args);
  return cudaGetLastError();
}

}  // namespace

cudaError_t SimtForward(const BlockProblem& p, const TensorView& q, const TensorView& k,
                        const TensorView& v, const TensorView& o, const TensorView& lse,
                        cudaStream_t stream) {
  SimtArgs a{};
  a.p = p;
  a.q = q;
  a.k = k;
  a.v = v;
  a.o = o;
  a.lse = lse;
  a.n_rt = (q.rows + kWarps - 1) / kWarps;
  const int64_t blocks = a.n_rt * p.head_count * p.batch;
  if (blocks > INT32_MAX) return cudaErrorInvalidConfiguration;
  // E = elements per lane: the smallest of 2, 4, 8 with 32 E >= dim.
  const bool bf16 = p.type == InputType::kBf16;
  if (p.dim <= 64)
    return bf16 ? LaunchForward<__nv_bfloat16, 2>(a, blocks, stream)
                : LaunchForward<__half, 2>(a, blocks, stream);
  if (p.dim <= 128)
    return bf16 ? LaunchForward<__nv_bfloat16, 4>(a, blocks, stream)
                : LaunchForward<__half, 4>(a, blocks, stream);
  if (p.dim <= kSimtMaxDim) {
    return bf16 ? LaunchForward<__nv_bfloat16, 8>(a, blocks, stream)
                : LaunchForward<__half, 8>(a, blocks, stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t SimtBackward(const BlockProblem& p, const TensorView& q, const TensorView& k,
                         const TensorView& v, const TensorView& d_o, const TensorView& lse,
                         const TensorView& delta, const TensorView& dq, const TensorView& dk,
                         const TensorView& dv, cudaStream_t stream) {
  SimtArgs a{};
  a.p = p;
  a.q = q;
  a.k = k;
  a.v = v;
  a.lse = lse;
  a.d_o = d_o;
  a.delta = delta;
  a.dq = dq;
  a.dk = dk;
  a.dv = dv;
  a.kv_first = p.head_begin / p.group_size;
  a.n_kv = (p.head_begin + p.head_count - 1) / p.group_size - a.kv_first + 1;
  const int64_t n_kv_rt = (k.rows + kWarps - 1) / kWarps;
  const int64_t n_q_rt = (q.rows + kWarps - 1) / kWarps;
  const int64_t kv_blocks = n_kv_rt * a.n_kv * p.batch;
  const int64_t q_blocks = n_q_rt * p.head_count * p.batch;
  if (kv_blocks > INT32_MAX || q_blocks > INT32_MAX) return cudaErrorInvalidConfiguration;
  const bool bf16 = p.type == InputType::kBf16;
#define MESHPLAN_SIMT_BWD(T, E) \
  LaunchBackward<T, E>(a, kv_blocks, q_blocks, n_kv_rt, n_q_rt, stream)
  if (p.dim <= 64) return bf16 ? MESHPLAN_SIMT_BWD(__nv_bfloat16, 2) : MESHPLAN_SIMT_BWD(__half, 2);
  if (p.dim <= 128)
    return bf16 ? MESHPLAN_SIMT_BWD(__nv_bfloat16, 4) : MESHPLAN_SIMT_BWD(__half, 4);
  if (p.dim <= kSimtMaxDim)
    return bf16 ? MESHPLAN_SIMT_BWD(__nv_bfloat16, 8) : MESHPLAN_SIMT_BWD(__half, 8);
#undef MESHPLAN_SIMT_BWD
  return cudaErrorInvalidValue;
}

}  // namespace meshplan::exec::cuda::kern
