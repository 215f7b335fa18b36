// Tensor-core (WMMA, bf16/fp16 inputs, fp32 accumulation) forward of a block, FlashAttention-2
// style. One CTA of 4 warps per (query tile of 64 rows, query head, batch element); warp w owns
// query rows 16w..16w+15 of the tile. For each key tile of 64 rows:
//   S = Q K^T (WMMA, fp32 to a warp-private shared region), mask and online softmax per row
//   (two lanes per row), P (16-bit) to shared memory, O (fp32, shared) rescaled per row by
//   exp(m_old - m_new), then O += P V (WMMA, accumulator loaded from and stored to shared memory).
// Key tiles that the mask hides from the whole query tile are skipped; tiles it shows entirely
// skip the per-element mask. At the end the block result (O / l, m + log l) is folded into the
// accumulator (o, lse) by the LSE merge.
//
// Shared memory (bytes, D = 64 / 128): K and V tiles [64][D+8] 16-bit, O [64][D+4] fp32, Q
// staging [64][D+8] 16-bit aliased with S [64][68] fp32 + P [64][72] 16-bit (Q lives in
// registers after the prologue), row statistics and positions: 63 KB / 95 KB.
#include <mma.h>

#include "executor/cuda/kernels/common.cuh"
#include "executor/cuda/kernels/fragment_load.cuh"
#include "executor/cuda/kernels/internal.h"
#include "executor/cuda/kernels/tile_load.cuh"

namespace meshplan::exec::cuda::kern {
namespace {

namespace wmma = nvcuda::wmma;

template <int D>
struct FwdCfg {
  static constexpr int kBM = 64;  // query rows per CTA
  static constexpr int kBN = 64;  // key rows per step
  static constexpr int kWarps = 4;
  static constexpr int kThreads = 32 * kWarps;
  static constexpr int kLdT = D + 8;    // Q, K, V tiles (16-bit elements; multiple of 8)
  static constexpr int kLdS = kBN + 4;  // S (fp32; multiple of 4)
  static constexpr int kLdP = kBN + 8;  // P (16-bit)
  static constexpr int kLdO = D + 4;    // O (fp32)
  static constexpr size_t kOffK = 0;
  static constexpr size_t kOffV = kOffK + size_t{kBN} * kLdT * 2;
  static constexpr size_t kOffO = kOffV + size_t{kBN} * kLdT * 2;
  static constexpr size_t kOffQ = kOffO + size_t{kBM} * kLdO * 4;  // Q staging, then S and P
  static constexpr size_t kOffS = kOffQ;
  static constexpr size_t kOffP = kOffS + size_t{kBM} * kLdS * 4;
  static constexpr size_t kEndQ = kOffQ + size_t{kBM} * kLdT * 2;
  static constexpr size_t kEndP = kOffP + size_t{kBM} * kLdP * 2;
  static constexpr size_t kOffM = RoundUp(MaxOf(kEndQ, kEndP), 128);
  static constexpr size_t kOffL = kOffM + kBM * 4;
  static constexpr size_t kOffQdoc = kOffL + kBM * 4;
  static constexpr size_t kOffKdoc = kOffQdoc + kBM * 4;
  static constexpr size_t kOffQpos = kOffKdoc + kBN * 4;
  static constexpr size_t kOffKpos = kOffQpos + kBM * 8;
  static constexpr size_t kBytes = kOffKpos + kBN * 8;
  // WMMA pointers must be 32-byte aligned: every region starts at a multiple of 128 bytes and
  // 16-row / 16-column steps inside a region are multiples of 32 bytes.
  static_assert(kOffV % 128 == 0 && kOffO % 128 == 0 && kOffQ % 128 == 0 && kOffP % 128 == 0);
  static_assert(kOffQpos % 8 == 0);
  static_assert((16 * kLdT * 2) % 32 == 0 && (16 * kLdS * 4) % 32 == 0 &&
                (16 * kLdP * 2) % 32 == 0 && (16 * kLdO * 4) % 32 == 0);
};

struct FwdArgs {
  BlockProblem p;
  TensorView q, k, v, o, lse;
  int64_t n_qt;  // query tiles
  bool vec;      // 16-byte loads of q, k, v
};

template <typename T, int D>
__global__ void __launch_bounds__(FwdCfg<D>::kThreads) TcForwardKernel(const FwdArgs a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
  __trap();  // bf16 WMMA needs sm_80; the host never launches this kernel there
#else
  using C = FwdCfg<D>;
  extern __shared__ __align__(128) unsigned char smem[];
  T* const sK = reinterpret_cast<T*>(smem + C::kOffK);
  T* const sV = reinterpret_cast<T*>(smem + C::kOffV);
  float* const sO = reinterpret_cast<float*>(smem + C::kOffO);
  T* const sQ = reinterpret_cast<T*>(smem + C::kOffQ);
  float* const sS = reinterpret_cast<float*>(smem + C::kOffS);
  T* const sP = reinterpret_cast<T*>(smem + C::kOffP);
  float* const sM = reinterpret_cast<float*>(smem + C::kOffM);
  float* const sL = reinterpret_cast<float*>(smem + C::kOffL);
  int32_t* const sQdoc = reinterpret_cast<int32_t*>(smem + C::kOffQdoc);
  int32_t* const sKdoc = reinterpret_cast<int32_t*>(smem + C::kOffKdoc);
  int64_t* const sQpos = reinterpret_cast<int64_t*>(smem + C::kOffQpos);
  int64_t* const sKpos = reinterpret_cast<int64_t*>(smem + C::kOffKpos);

  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid >> 5;
  const int lane = tid & 31;
  const BlockProblem& p = a.p;
  const bool docs = HasDocs(p.mask);

  // blockIdx.x = (b * head_count + head) * n_qt + (n_qt - 1 - query tile): the last query tiles
  // (most visible keys under causal masks) start first.
  int64_t idx = blockIdx.x;
  const int64_t qt = a.n_qt - 1 - idx % a.n_qt;
  idx /= a.n_qt;
  const int32_t h = p.head_begin + static_cast<int32_t>(idx % p.head_count);
  const int64_t b = idx / p.head_count;
  const int32_t kvh = h / p.group_size;
  const int64_t nq = a.q.rows;
  const int64_t nk = a.k.rows;
  const int64_t q0 = qt * C::kBM;
  const int q_valid = static_cast<int>(nq - q0 < C::kBM ? nq - q0 : C::kBM);

  // ---- Prologue: query positions, statistics, O = 0, Q fragments ----
  for (int i = tid; i < C::kBM; i += C::kThreads) {
    const int64_t pos = i < q_valid ? Pos(a.q.positions, q0 + i) : 0;
    sQpos[i] = pos;
    sQdoc[i] = docs && i < q_valid ? DocOf(p.mask, pos) : 0;
    sM[i] = NegInf();
    sL[i] = 0.0f;
  }
  for (int i = tid; i < C::kBM * C::kLdO; i += C::kThreads) sO[i] = 0.0f;
  LoadRows<T, D, C::kBM, C::kThreads>(sQ, C::kLdT, a.q, b, q0, h, q_valid, a.vec);
  __syncthreads();

  int64_t q_lo, q_hi;
  WarpMinMax64(sQpos, q_valid, q_lo, q_hi);
  wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> qf[D / 16];
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk)
    LoadShared(qf[kk], sQ + warp * 16 * C::kLdT + kk * 16, C::kLdT);
  __syncthreads();  // the Q staging area becomes S and P

  // Per-lane roles in the softmax: two lanes per row, interleaved columns.
  const int srow_local = lane >> 1;
  const int half = lane & 1;
  const int row = warp * 16 + srow_local;
  const bool row_ok = row < q_valid;
  float* const srow = sS + row * C::kLdS;
  T* const prow = sP + row * C::kLdP;
  float* const orow = sO + row * C::kLdO;

  const int64_t n_kt = (nk + C::kBN - 1) / C::kBN;
  for (int64_t kt = 0; kt < n_kt; ++kt) {
    const int64_t k0 = kt * C::kBN;
    const int k_valid = static_cast<int>(nk - k0 < C::kBN ? nk - k0 : C::kBN);
    __syncthreads();  // the previous step is done with sK, sV, sKpos, sKdoc
    for (int i = tid; i < C::kBN; i += C::kThreads) {
      const int64_t pos = i < k_valid ? Pos(a.k.positions, k0 + i) : 0;
      sKpos[i] = pos;
      sKdoc[i] = docs && i < k_valid ? DocOf(p.mask, pos) : 0;
    }
    __syncthreads();
    int64_t k_lo, k_hi;
    WarpMinMax64(sKpos, k_valid, k_lo, k_hi);
    const int vis = ClassifyTile(p.mask, q_lo, q_hi, k_lo, k_hi);  // the same in every thread
    if (vis == kTileNone) continue;
    LoadRows<T, D, C::kBN, C::kThreads>(sK, C::kLdT, a.k, b, k0, kvh, k_valid, a.vec);
    LoadRows<T, D, C::kBN, C::kThreads>(sV, C::kLdT, a.v, b, k0, kvh, k_valid, a.vec);
    __syncthreads();

    // ---- S = Q K^T for this warp's 16 rows: B = K^T is K read column-major ----
    {
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> kf;
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> sf;
#pragma unroll
      for (int n = 0; n < C::kBN / 16; ++n) {
        wmma::fill_fragment(sf, 0.0f);
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) {
          LoadShared(kf, sK + n * 16 * C::kLdT + kk * 16, C::kLdT);
          wmma::mma_sync(sf, qf[kk], kf, sf);
        }
        wmma::store_matrix_sync(sS + warp * 16 * C::kLdS + n * 16, sf, C::kLdS,
                                wmma::mem_row_major);
      }
    }
    __syncwarp();

    // ---- Mask and online softmax: lanes 2r, 2r+1 own row r, columns j = 2c + half ----
    {
      const int64_t qp = sQpos[row];
      const int32_t qd = sQdoc[row];
      float mx = NegInf();
#pragma unroll 8
      for (int c = 0; c < C::kBN / 2; ++c) {
        const int j = 2 * c + half;
        const bool ok = row_ok && j < k_valid &&
                        (vis == kTileAll || VisibleWithDocs(p.mask, qp, sKpos[j], qd, sKdoc[j]));
        const float s = ok ? srow[j] * p.scale : NegInf();
        srow[j] = s;
        mx = fmaxf(mx, s);
      }
      mx = fmaxf(mx, __shfl_xor_sync(kFullMask, mx, 1));
      const float m_old = sM[row];
      const float m_new = fmaxf(m_old, mx);
      float sum = 0.0f;
#pragma unroll 8
      for (int c = 0; c < C::kBN / 2; ++c) {
        const int j = 2 * c + half;
        const float s = srow[j];
        const float pr = s == NegInf() ? 0.0f : expf(s - m_new);  // m_new is finite when s is
        prow[j] = FromFloat<T>(pr);
        sum += pr;
      }
      sum += __shfl_xor_sync(kFullMask, sum, 1);
      // m_old = -inf: O and l are still 0 for this row, any factor works; 0 avoids inf - inf.
      const float alpha = m_old == NegInf() ? 0.0f : expf(m_old - m_new);
      if (alpha != 1.0f) {
#pragma unroll 8
        for (int c = 0; c < D / 2; ++c) orow[2 * c + half] *= alpha;
      }
      __syncwarp();  // both lanes of the row have read sM[row]
      if (half == 0) {
        sM[row] = m_new;
        sL[row] = sL[row] * alpha + sum;
      }
    }
    __syncwarp();

    // ---- O += P V for this warp's 16 rows ----
    {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> pf[C::kBN / 16];
#pragma unroll
      for (int kk = 0; kk < C::kBN / 16; ++kk) {
        LoadShared(pf[kk], sP + warp * 16 * C::kLdP + kk * 16, C::kLdP);
      }
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> vf;
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> of;
#pragma unroll
      for (int n = 0; n < D / 16; ++n) {
        float* const optr = sO + warp * 16 * C::kLdO + n * 16;
        wmma::load_matrix_sync(of, optr, C::kLdO, wmma::mem_row_major);
#pragma unroll
        for (int kk = 0; kk < C::kBN / 16; ++kk) {
          LoadShared(vf, sV + kk * 16 * C::kLdT + n * 16, C::kLdT);
          wmma::mma_sync(of, pf[kk], vf, of);
        }
        wmma::store_matrix_sync(optr, of, C::kLdO, wmma::mem_row_major);
      }
    }
  }
  __syncwarp();  // this warp's O rows are stored

  // ---- Fold (O / l, m + log l) into the accumulator, one row at a time per warp ----
  float* const o_data = static_cast<float*>(a.o.data);
  float* const lse_data = static_cast<float*>(a.lse.data);
  for (int r = 0; r < 16; ++r) {
    const int fr = warp * 16 + r;
    if (fr >= q_valid) break;
    const float l = sL[fr];
    if (!(l > 0.0f)) continue;  // no visible key in this block: lse_blk = -inf, nothing to fold
    const float lse_blk = sM[fr] + logf(l);
    const float inv_l = 1.0f / l;
    float* const og = o_data + RowIndex(a.o, b, q0 + fr, h) * D;
    float* const lg = lse_data + RowIndex(a.lse, b, q0 + fr, h);
    const float acc = *lg;
    const bool fresh = acc == NegInf();
    float merged, wa, wb;
    MergeWeights(acc, lse_blk, merged, wa, wb);
    const float* const src = sO + fr * C::kLdO;
    for (int e = lane; e < D; e += 32) {
      const float ob = src[e] * inv_l;
      og[e] = fresh ? ob : wa * og[e] + wb * ob;  // fresh: the old o is never read (may be poison)
    }
    __syncwarp();  // every lane has read *lg
    if (lane == 0) *lg = merged;
  }
#endif
}

template <typename T, int D>
cudaError_t Launch(const FwdArgs& a, int64_t blocks, cudaStream_t stream) {
  using C = FwdCfg<D>;
  return LaunchWithSharedMemory(TcForwardKernel<T, D>, blocks, C::kThreads, C::kBytes, stream, a);
}

}  // namespace

size_t TcForwardSharedBytes(int dim) {
  if (dim == 64) return FwdCfg<64>::kBytes;
  if (dim == 128) return FwdCfg<128>::kBytes;
  return 0;
}

cudaError_t TcForward(const BlockProblem& p, const TensorView& q, const TensorView& k,
                      const TensorView& v, const TensorView& o, const TensorView& lse,
                      cudaStream_t stream) {
  FwdArgs a{p, q, k, v, o, lse, 0, false};
  a.n_qt = (q.rows + FwdCfg<64>::kBM - 1) / FwdCfg<64>::kBM;  // kBM is 64 for every D
  a.vec = Aligned16(q.data) && Aligned16(k.data) && Aligned16(v.data);
  const int64_t blocks = a.n_qt * p.head_count * p.batch;
  if (blocks > INT32_MAX) return cudaErrorInvalidConfiguration;
  const bool bf16 = p.type == InputType::kBf16;
  if (p.dim == 64)
    return bf16 ? Launch<__nv_bfloat16, 64>(a, blocks, stream)
                : Launch<__half, 64>(a, blocks, stream);
  if (p.dim == 128) {
    return bf16 ? Launch<__nv_bfloat16, 128>(a, blocks, stream)
                : Launch<__half, 128>(a, blocks, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace meshplan::exec::cuda::kern
