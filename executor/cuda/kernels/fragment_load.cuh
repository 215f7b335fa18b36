// Shared -> register loads of 16x16x16 WMMA operand fragments for the tensor-core kernels.
//
// Why not plain wmma::load_matrix_sync: nvcc 13.0 emits fp16 operand loads from shared memory as
// `wmma.load.{a,b}...shared.f16`, which ptxas lowers to ldmatrix (LDSM, LDSM.MT for the
// transposed layouts), but bf16 ones as `wmma.load...bf16` on a generic address: generic LD.E of
// 32-bit words plus a MOVM per register for the transposed layouts, no LDSM (sm_90a SASS; see
// docs/gpu-executor.md, "Own kernels: review fixes"). For bf16 LoadShared issues the same PTX
// instruction with the `.shared` state space on the shared-window address of `p`, so ptxas sees
// a shared-memory load and can pick LDSM. It is the same instruction (same shape, layout, type
// and stride) reading the same bytes, and it writes the four 32-bit fragment registers in the
// order the CUDA header's __mma_bf16_m16n16k16_ld_{a,b} does, so the fragment holds the same bits
// as load_matrix_sync's.
#pragma once

#include <cuda_bf16.h>
#include <mma.h>

namespace meshplan::exec::cuda::kern {

// Contract of wmma::load_matrix_sync (warp-wide, p 32-byte aligned, ldm in elements, a multiple
// of 8) plus: p points into shared memory.
template <typename Frag, typename T>
__device__ __forceinline__ void LoadShared(Frag& f, const T* p, unsigned ldm) {
  nvcuda::wmma::load_matrix_sync(f, p, ldm);
}

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
template <typename Use, typename Layout>
using Bf16Operand = nvcuda::wmma::fragment<Use, 16, 16, 16, __nv_bfloat16, Layout>;

// volatile and the "memory" clobber: the compiler does not know what an asm statement reads, and
// without them could move or merge the load across the __syncthreads/__syncwarp and the
// shared-memory stores that produce its operand.
#define MESHPLAN_BF16_SHARED_LOAD(USE, LAYOUT, PTX_USE, PTX_LAYOUT)                           \
  __device__ __forceinline__ void LoadShared(                                                 \
      Bf16Operand<nvcuda::wmma::USE, nvcuda::wmma::LAYOUT>& f, const __nv_bfloat16* p,        \
      unsigned ldm) {                                                                         \
    static_assert(sizeof(f.x) == 4 * sizeof(unsigned), "bf16 16x16x16 operand: 4 registers"); \
    unsigned* const r = reinterpret_cast<unsigned*>(&f);                                      \
    const unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(p));                 \
    asm volatile("wmma.load." PTX_USE ".sync.aligned." PTX_LAYOUT                             \
                 ".m16n16k16.shared.bf16 {%0, %1, %2, %3}, [%4], %5;"                         \
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])                             \
                 : "r"(addr), "r"(ldm)                                                        \
                 : "memory");                                                                 \
  }
MESHPLAN_BF16_SHARED_LOAD(matrix_a, row_major, "a", "row")
MESHPLAN_BF16_SHARED_LOAD(matrix_a, col_major, "a", "col")
MESHPLAN_BF16_SHARED_LOAD(matrix_b, row_major, "b", "row")
MESHPLAN_BF16_SHARED_LOAD(matrix_b, col_major, "b", "col")
#undef MESHPLAN_BF16_SHARED_LOAD
#endif

}  // namespace meshplan::exec::cuda::kern
