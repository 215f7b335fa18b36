// Tensor-core (WMMA) backward of a block, FlashAttention-2 style. One CTA of 4 warps per (key tile
// of 64 rows, KV head, chunk of that KV head's query heads, batch element); warp w owns key rows
// 16w..16w+15 and keeps their dK and dV accumulators in registers (WMMA accumulator fragments).
// The CTA loops over the query heads of its chunk (the heads of the KV head's group that the
// problem computes, split into n_split contiguous chunks) and over all query tiles (kBM rows):
//   S^T = K Q^T, P^T = exp(scale S^T - lse) on visible pairs (0 elsewhere and where lse = -inf),
//   dV += P^T dO, dP^T = V dO^T, dS^T = P^T (dP^T - delta), dK += dS^T Q,
//   dQ += scale dS K (all four warps, added to global dq with fp32 atomics).
// P^T and dS^T go through shared memory as 16-bit (the WMMA operand type); P^T is also kept in
// fp32 for dS. At the end dK (times scale) and dV are added into global dk, dv: with n_split = 1
// this CTA is the only one touching those rows and that KV head in the launch and adds plainly;
// with n_split > 1 the n_split CTAs of a (key tile, KV head, batch) add into the same rows, with
// fp32 atomics. Query tiles that the mask hides from the whole key tile are skipped.
//
// n_split (host, TcBackward): 1 when (key tiles x KV heads x batch) already gives at least twice
// as many CTAs as the device has SMs (two CTAs fit per SM), else the fewest chunks that reach
// that many CTAs with the shortest longest chunk, capped by the heads a KV head has in the launch
// (e.g. 1K keys, 1 KV head of 8 query heads, batch 1 on 132 SMs: 16 CTAs -> n_split 8, 128 CTAs).
//
// Tiles: 64 key rows; query tiles of 64 rows (D = 64) or 32 rows (D = 128). Shared memory: K, V
// [64][D+8], Q, dO [kBM][D+8] 16-bit; S/P and dP [64][kBM+4] fp32; P/dS [64][kBM+8] 16-bit; a
// 16x16 fp32 scratch per warp; positions and row statistics: 85 KB (D = 64), 79.4 KB (D = 128).
#include <mma.h>

#include <algorithm>
#include <atomic>

#include "executor/cuda/kernels/common.cuh"
#include "executor/cuda/kernels/fragment_load.cuh"
#include "executor/cuda/kernels/internal.h"
#include "executor/cuda/kernels/tile_load.cuh"

namespace meshplan::exec::cuda::kern {
namespace {

namespace wmma = nvcuda::wmma;

template <int D>
struct BwdCfg {
  static constexpr int kBN = 64;                  // key rows per CTA (16 per warp)
  static constexpr int kBM = D == 128 ? 32 : 64;  // query rows per step
  static constexpr int kWarps = 4;
  static constexpr int kThreads = 32 * kWarps;
  static constexpr int kLdT = D + 8;    // K, V, Q, dO (16-bit; multiple of 8)
  static constexpr int kLdS = kBM + 4;  // S^T -> P^T, dP^T (fp32; multiple of 4)
  static constexpr int kLdP = kBM + 8;  // P^T -> dS^T (16-bit)
  static constexpr size_t kOffK = 0;
  static constexpr size_t kOffV = kOffK + size_t{kBN} * kLdT * 2;
  static constexpr size_t kOffQ = kOffV + size_t{kBN} * kLdT * 2;
  static constexpr size_t kOffDo = kOffQ + size_t{kBM} * kLdT * 2;
  static constexpr size_t kOffS = kOffDo + size_t{kBM} * kLdT * 2;
  static constexpr size_t kOffDp = kOffS + size_t{kBN} * kLdS * 4;
  static constexpr size_t kOffP = kOffDp + size_t{kBN} * kLdS * 4;
  static constexpr size_t kOffScratch = kOffP + size_t{kBN} * kLdP * 2;  // 256 floats per warp
  static constexpr size_t kOffLse = kOffScratch + size_t{kWarps} * 256 * 4;
  static constexpr size_t kOffDelta = kOffLse + kBM * 4;
  static constexpr size_t kOffQdoc = kOffDelta + kBM * 4;
  static constexpr size_t kOffKdoc = kOffQdoc + kBM * 4;
  static constexpr size_t kOffQpos = kOffKdoc + kBN * 4;
  static constexpr size_t kOffKpos = kOffQpos + kBM * 8;
  static constexpr size_t kBytes = kOffKpos + kBN * 8;
  static_assert(kOffV % 128 == 0 && kOffQ % 128 == 0 && kOffDo % 128 == 0 && kOffS % 128 == 0 &&
                kOffDp % 128 == 0 && kOffP % 128 == 0 && kOffScratch % 128 == 0);
  static_assert(kOffQpos % 8 == 0);
  static_assert((16 * kLdT * 2) % 32 == 0 && (16 * kLdS * 4) % 32 == 0 &&
                (16 * kLdP * 2) % 32 == 0);
};

struct BwdArgs {
  BlockProblem p;
  TensorView q, k, v, d_o, lse, delta, dq, dk, dv;
  int64_t n_kt;      // key tiles
  int32_t kv_first;  // first KV head of the computed query heads
  int32_t n_kv;      // KV heads
  int32_t n_split;   // CTAs per (key tile, KV head, batch), each a chunk of the KV head's heads
  bool vec;          // 16-byte loads of q, k, v, d_o
};

template <typename T, int D>
__global__ void __launch_bounds__(BwdCfg<D>::kThreads) TcBackwardKernel(const BwdArgs a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
  __trap();  // bf16 WMMA needs sm_80; the host never launches this kernel there
#else
  using C = BwdCfg<D>;
  using FragA = wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major>;
  using FragAcol = wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::col_major>;
  using FragB = wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major>;
  using FragBcol = wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major>;
  using FragC = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

  extern __shared__ __align__(128) unsigned char smem[];
  T* const sK = reinterpret_cast<T*>(smem + C::kOffK);
  T* const sV = reinterpret_cast<T*>(smem + C::kOffV);
  T* const sQ = reinterpret_cast<T*>(smem + C::kOffQ);
  T* const sDo = reinterpret_cast<T*>(smem + C::kOffDo);
  float* const sS = reinterpret_cast<float*>(smem + C::kOffS);
  float* const sDp = reinterpret_cast<float*>(smem + C::kOffDp);
  T* const sP = reinterpret_cast<T*>(smem + C::kOffP);
  float* const sScratch = reinterpret_cast<float*>(smem + C::kOffScratch);
  float* const sLse = reinterpret_cast<float*>(smem + C::kOffLse);
  float* const sDelta = reinterpret_cast<float*>(smem + C::kOffDelta);
  int32_t* const sQdoc = reinterpret_cast<int32_t*>(smem + C::kOffQdoc);
  int32_t* const sKdoc = reinterpret_cast<int32_t*>(smem + C::kOffKdoc);
  int64_t* const sQpos = reinterpret_cast<int64_t*>(smem + C::kOffQpos);
  int64_t* const sKpos = reinterpret_cast<int64_t*>(smem + C::kOffKpos);

  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid >> 5;
  const int lane = tid & 31;
  const int kr0 = warp * 16;  // this warp's first key row in the tile
  float* const scratch = sScratch + warp * 256;
  const BlockProblem& p = a.p;
  const bool docs = HasDocs(p.mask);

  // blockIdx.x = ((b * n_kv + kv head - kv_first) * n_split + chunk) * n_kt + key tile.
  int64_t idx = blockIdx.x;
  const int64_t kt = idx % a.n_kt;
  idx /= a.n_kt;
  const int32_t chunk = static_cast<int32_t>(idx % a.n_split);
  idx /= a.n_split;
  const int32_t kvh = a.kv_first + static_cast<int32_t>(idx % a.n_kv);
  const int64_t b = idx / a.n_kv;
  const int32_t g = p.group_size;
  // The KV head's computed query heads [kv_h_begin, kv_h_end) (non-empty by the choice of
  // kv_first and n_kv), and this CTA's contiguous share of them: chunks of floor or ceil of
  // n_h / n_split heads that together cover the range once; empty when n_h < n_split.
  const int32_t kv_h_begin = max(p.head_begin, kvh * g);
  const int32_t kv_h_end = min(p.head_begin + p.head_count, (kvh + 1) * g);
  const int64_t n_h = kv_h_end - kv_h_begin;
  const int32_t h_begin = kv_h_begin + static_cast<int32_t>(chunk * n_h / a.n_split);
  const int32_t h_end = kv_h_begin + static_cast<int32_t>((chunk + 1) * n_h / a.n_split);
  if (h_begin == h_end) return;  // no head: contributes nothing (uniform, before any barrier)
  const int64_t nq = a.q.rows;
  const int64_t nk = a.k.rows;
  const int64_t k0 = kt * C::kBN;
  const int k_valid = static_cast<int>(nk - k0 < C::kBN ? nk - k0 : C::kBN);

  // ---- Prologue: key positions, K and V tiles ----
  for (int i = tid; i < C::kBN; i += C::kThreads) {
    const int64_t pos = i < k_valid ? Pos(a.k.positions, k0 + i) : 0;
    sKpos[i] = pos;
    sKdoc[i] = docs && i < k_valid ? DocOf(p.mask, pos) : 0;
  }
  LoadRows<T, D, C::kBN, C::kThreads>(sK, C::kLdT, a.k, b, k0, kvh, k_valid, a.vec);
  LoadRows<T, D, C::kBN, C::kThreads>(sV, C::kLdT, a.v, b, k0, kvh, k_valid, a.vec);
  __syncthreads();
  int64_t k_lo, k_hi;
  WarpMinMax64(sKpos, k_valid, k_lo, k_hi);

  FragC dk[D / 16], dv[D / 16];
#pragma unroll
  for (int n = 0; n < D / 16; ++n) {
    wmma::fill_fragment(dk[n], 0.0f);
    wmma::fill_fragment(dv[n], 0.0f);
  }
  bool any = false;  // some query tile was visible (the same in every thread)

  const float* const lse_data = static_cast<const float*>(a.lse.data);
  const float* const delta_data = static_cast<const float*>(a.delta.data);
  float* const dq_data = static_cast<float*>(a.dq.data);
  const int64_t n_qt = (nq + C::kBM - 1) / C::kBM;

  for (int32_t h = h_begin; h < h_end; ++h) {
    for (int64_t qt = 0; qt < n_qt; ++qt) {
      const int64_t q0 = qt * C::kBM;
      const int q_valid = static_cast<int>(nq - q0 < C::kBM ? nq - q0 : C::kBM);
      __syncthreads();  // the previous step is done with sQ, sDo, sP and the row data
      for (int i = tid; i < C::kBM; i += C::kThreads) {
        const bool ok = i < q_valid;
        const int64_t pos = ok ? Pos(a.q.positions, q0 + i) : 0;
        sQpos[i] = pos;
        sQdoc[i] = docs && ok ? DocOf(p.mask, pos) : 0;
        sLse[i] = ok ? lse_data[RowIndex(a.lse, b, q0 + i, h)] : NegInf();
        sDelta[i] = ok ? delta_data[RowIndex(a.delta, b, q0 + i, h)] : 0.0f;
      }
      __syncthreads();
      int64_t q_lo, q_hi;
      WarpMinMax64(sQpos, q_valid, q_lo, q_hi);
      const int vis = ClassifyTile(p.mask, q_lo, q_hi, k_lo, k_hi);  // the same in every thread
      if (vis == kTileNone) continue;
      any = true;
      LoadRows<T, D, C::kBM, C::kThreads>(sQ, C::kLdT, a.q, b, q0, h, q_valid, a.vec);
      LoadRows<T, D, C::kBM, C::kThreads>(sDo, C::kLdT, a.d_o, b, q0, h, q_valid, a.vec);
      __syncthreads();

      // ---- S^T = K_w Q^T (16 x kBM): B = Q^T is Q read column-major ----
      {
        FragA ka;
        FragBcol qb;
        FragC sf;
#pragma unroll 1
        for (int n = 0; n < C::kBM / 16; ++n) {
          wmma::fill_fragment(sf, 0.0f);
#pragma unroll
          for (int kk = 0; kk < D / 16; ++kk) {
            LoadShared(ka, sK + kr0 * C::kLdT + kk * 16, C::kLdT);
            LoadShared(qb, sQ + n * 16 * C::kLdT + kk * 16, C::kLdT);
            wmma::mma_sync(sf, ka, qb, sf);
          }
          wmma::store_matrix_sync(sS + kr0 * C::kLdS + n * 16, sf, C::kLdS, wmma::mem_row_major);
        }
      }
      __syncwarp();

      // ---- P^T on this warp's rows: element (key j, query c) ----
      for (int e = lane; e < 16 * C::kBM; e += 32) {
        const int j = kr0 + e / C::kBM;
        const int c = e % C::kBM;
        const float l = sLse[c];
        const bool ok =
            j < k_valid && c < q_valid && l != NegInf() &&
            (vis == kTileAll || VisibleWithDocs(p.mask, sQpos[c], sKpos[j], sQdoc[c], sKdoc[j]));
        const float pr = ok ? expf(p.scale * sS[j * C::kLdS + c] - l) : 0.0f;
        sS[j * C::kLdS + c] = pr;
        sP[j * C::kLdP + c] = FromFloat<T>(pr);
      }
      __syncwarp();

      // ---- dV_w += P^T_w dO ----
      {
        FragA pa[C::kBM / 16];
#pragma unroll
        for (int kk = 0; kk < C::kBM / 16; ++kk)
          LoadShared(pa[kk], sP + kr0 * C::kLdP + kk * 16, C::kLdP);
        FragB ob;
#pragma unroll
        for (int n = 0; n < D / 16; ++n) {
#pragma unroll
          for (int kk = 0; kk < C::kBM / 16; ++kk) {
            LoadShared(ob, sDo + kk * 16 * C::kLdT + n * 16, C::kLdT);
            wmma::mma_sync(dv[n], pa[kk], ob, dv[n]);
          }
        }
      }

      // ---- dP^T = V_w dO^T (16 x kBM): B = dO^T is dO read column-major ----
      {
        FragA va;
        FragBcol ob;
        FragC pf;
#pragma unroll 1
        for (int n = 0; n < C::kBM / 16; ++n) {
          wmma::fill_fragment(pf, 0.0f);
#pragma unroll
          for (int kk = 0; kk < D / 16; ++kk) {
            LoadShared(va, sV + kr0 * C::kLdT + kk * 16, C::kLdT);
            LoadShared(ob, sDo + n * 16 * C::kLdT + kk * 16, C::kLdT);
            wmma::mma_sync(pf, va, ob, pf);
          }
          wmma::store_matrix_sync(sDp + kr0 * C::kLdS + n * 16, pf, C::kLdS, wmma::mem_row_major);
        }
      }
      __syncwarp();  // dP^T stored; every lane is past the dV products that read sP

      // ---- dS^T = P^T (dP^T - delta), over P^T in sP ----
      for (int e = lane; e < 16 * C::kBM; e += 32) {
        const int j = kr0 + e / C::kBM;
        const int c = e % C::kBM;
        // Masked pairs (P = 0) contribute exactly 0, even where dP - delta is not finite.
        const float pr = sS[j * C::kLdS + c];
        const float ds = pr == 0.0f ? 0.0f : pr * (sDp[j * C::kLdS + c] - sDelta[c]);
        sP[j * C::kLdP + c] = FromFloat<T>(ds);
      }
      __syncwarp();

      // ---- dK_w += dS^T_w Q (scaled at the end) ----
      {
        FragA da[C::kBM / 16];
#pragma unroll
        for (int kk = 0; kk < C::kBM / 16; ++kk)
          LoadShared(da[kk], sP + kr0 * C::kLdP + kk * 16, C::kLdP);
        FragB qb;
#pragma unroll
        for (int n = 0; n < D / 16; ++n) {
#pragma unroll
          for (int kk = 0; kk < C::kBM / 16; ++kk) {
            LoadShared(qb, sQ + kk * 16 * C::kLdT + n * 16, C::kLdT);
            wmma::mma_sync(dk[n], da[kk], qb, dk[n]);
          }
        }
      }
      __syncthreads();  // dS^T of every warp is in sP

      // ---- dQ += scale dS K: dS = (dS^T)^T is sP read column-major; 16x16 output tiles ----
      {
        FragAcol dsa;
        FragB kb;
        FragC qf;
#pragma unroll 1
        for (int t = warp; t < (C::kBM / 16) * (D / 16); t += C::kWarps) {
          const int mi = t / (D / 16);
          const int ni = t % (D / 16);
          wmma::fill_fragment(qf, 0.0f);
#pragma unroll
          for (int kk = 0; kk < C::kBN / 16; ++kk) {
            LoadShared(dsa, sP + kk * 16 * C::kLdP + mi * 16, C::kLdP);
            LoadShared(kb, sK + kk * 16 * C::kLdT + ni * 16, C::kLdT);
            wmma::mma_sync(qf, dsa, kb, qf);
          }
          wmma::store_matrix_sync(scratch, qf, 16, wmma::mem_row_major);
          __syncwarp();
          for (int e = lane; e < 256; e += 32) {
            const int qi = mi * 16 + (e >> 4);
            if (qi < q_valid) {
              atomicAdd(dq_data + RowIndex(a.dq, b, q0 + qi, h) * D + ni * 16 + (e & 15),
                        p.scale * scratch[e]);
            }
          }
          __syncwarp();  // scratch is reused
        }
      }
    }
  }
  if (!any) return;  // nothing visible: dK = dV = 0

  // ---- dk += scale * dK_w, dv += dV_w for this warp's valid key rows ----
  // With n_split > 1 the other chunks' CTAs add into the same elements during this launch.
  float* const dk_data = static_cast<float*>(a.dk.data);
  float* const dv_data = static_cast<float*>(a.dv.data);
  const bool shared_rows = a.n_split > 1;
#pragma unroll
  for (int n = 0; n < D / 16; ++n) {
#pragma unroll
    for (int t = 0; t < dk[n].num_elements; ++t) dk[n].x[t] *= p.scale;
    wmma::store_matrix_sync(scratch, dk[n], 16, wmma::mem_row_major);
    __syncwarp();
    for (int e = lane; e < 256; e += 32) {
      const int j = kr0 + (e >> 4);
      if (j < k_valid) {
        float* const out = dk_data + RowIndex(a.dk, b, k0 + j, kvh) * D + n * 16 + (e & 15);
        if (shared_rows) {
          atomicAdd(out, scratch[e]);
        } else {
          *out += scratch[e];
        }
      }
    }
    __syncwarp();
    wmma::store_matrix_sync(scratch, dv[n], 16, wmma::mem_row_major);
    __syncwarp();
    for (int e = lane; e < 256; e += 32) {
      const int j = kr0 + (e >> 4);
      if (j < k_valid) {
        float* const out = dv_data + RowIndex(a.dv, b, k0 + j, kvh) * D + n * 16 + (e & 15);
        if (shared_rows) {
          atomicAdd(out, scratch[e]);
        } else {
          *out += scratch[e];
        }
      }
    }
    __syncwarp();
  }
#endif
}

template <typename T, int D>
cudaError_t Launch(const BwdArgs& a, int64_t blocks, cudaStream_t stream) {
  using C = BwdCfg<D>;
  return LaunchWithSharedMemory(TcBackwardKernel<T, D>, blocks, C::kThreads, C::kBytes, stream, a);
}

std::atomic<int> forced_head_split{0};  // SetTcBackwardHeadSplitForTesting; 0: automatic

// CTAs per (key tile, KV head, batch) for a launch of `cells` such triples (see the header
// comment): 1 when cells >= 2 x SMs or a KV head has one query head in the launch; else the
// fewest chunks whose longest chunk is as short as with ceil(2 x SMs / cells) chunks, at most the
// most query heads one KV head has in the launch. 1 (the unsplit launch) when the SM count cannot
// be read. The testing hook's value instead when one is set.
int32_t HeadSplit(const BlockProblem& p, int64_t cells, int32_t kv_first, int32_t n_kv) {
  const int forced = forced_head_split.load(std::memory_order_relaxed);
  if (forced >= 1) return forced;
  const int32_t g = p.group_size;
  const int32_t h_end = p.head_begin + p.head_count;
  // Query heads of the first, last and any middle KV head of [head_begin, h_end).
  int64_t max_heads = std::min(h_end, (kv_first + 1) * g) - p.head_begin;
  if (n_kv > 1) max_heads = std::max<int64_t>(max_heads, h_end - (kv_first + n_kv - 1) * g);
  if (n_kv > 2) max_heads = g;
  if (max_heads <= 1) return 1;
  int device = 0, sms = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
      sms < 1) {
    (void)cudaGetLastError();  // the failure was this query's; do not leave it to the launch
    return 1;
  }
  const int64_t target = 2 * int64_t{sms};
  if (cells >= target) return 1;
  const int64_t want = std::min((target + cells - 1) / cells, max_heads);
  const int64_t per_chunk = (max_heads + want - 1) / want;  // heads in the longest chunk
  return static_cast<int32_t>((max_heads + per_chunk - 1) / per_chunk);
}

}  // namespace

int SetTcBackwardHeadSplitForTesting(int n) { return forced_head_split.exchange(n < 0 ? 0 : n); }

size_t TcBackwardSharedBytes(int dim) {
  if (dim == 64) return BwdCfg<64>::kBytes;
  if (dim == 128) return BwdCfg<128>::kBytes;
  return 0;
}

cudaError_t TcBackward(const BlockProblem& p, const TensorView& q, const TensorView& k,
                       const TensorView& v, const TensorView& d_o, const TensorView& lse,
                       const TensorView& delta, const TensorView& dq, const TensorView& dk,
                       const TensorView& dv, cudaStream_t stream) {
  BwdArgs a{p, q, k, v, d_o, lse, delta, dq, dk, dv, 0, 0, 0, 1, false};
  a.n_kt = (k.rows + BwdCfg<64>::kBN - 1) / BwdCfg<64>::kBN;  // kBN is 64 for every D
  a.kv_first = p.head_begin / p.group_size;
  a.n_kv = (p.head_begin + p.head_count - 1) / p.group_size - a.kv_first + 1;
  a.n_split = HeadSplit(p, a.n_kt * a.n_kv * p.batch, a.kv_first, a.n_kv);
  a.vec = Aligned16(q.data) && Aligned16(k.data) && Aligned16(v.data) && Aligned16(d_o.data);
  const int64_t blocks = a.n_kt * a.n_kv * a.n_split * p.batch;
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
