// Arguments of the block-attention and copy kernels, shared by the CUDA kernels
// (executor/cuda/attention_kernels.h) and their host implementations
// (executor/device/host_kernels.h). Plain C++: no CUDA types, so host-only code can build and test
// the GPU executor's logic.
//
// Layout of every tensor view: memory [batch][rows][heads][dim], row-major (dim fastest),
// holding the global heads [head_begin, head_begin + heads). LSE and D views use dim = 1.
// Inputs Q, K, V, dO are bf16, fp16 or fp32 (InputType; the CUDA kernels take bf16 and fp16, the
// host backend all three); accumulators O, LSE, D, dQ, dK, dV are fp32.
#pragma once

#include <cstdint>

#include "core/sequence/mask_rule.h"

namespace meshplan::exec {

enum class InputType : uint8_t { kBf16, kFp16, kFp32 };

// Bytes of one input element.
inline int32_t InputBytes(InputType type) { return type == InputType::kFp32 ? 4 : 2; }

// Which kernel family runs a block. kAuto: cuDNN's fused attention where it can compute the
// block and cuDNN is there (executor/cuda/cudnn_attention.h), else the own tensor-core kernels
// (WMMA, sm_80+, dim 64 or 128), else the portable SIMT kernels. kCudnn: cuDNN for every block,
// failing the run on a block it cannot express. The own-kernel launchers
// (attention_kernels.h) treat kCudnn as kAuto.
enum class KernelPath : uint8_t { kAuto, kTensorCore, kSimt, kCudnn };

// The mask of a block, evaluated on token positions by core/sequence/mask_rule.h's rule; document
// indices come from doc_starts (doc(t) = index of the last doc_starts[i] <= t).
struct DeviceMask {
  // The mask's kind and parameters, one type from flag to kernel (core/sequence/mask.h
  // Mask::Params).
  MaskParams params{MaskKind::kFull, 0, 0};
  const int64_t* doc_starts = nullptr;  // device memory, ascending, doc_starts[0] == 0
  int32_t num_docs = 0;
  // The same num_docs starts in host memory, valid while the call runs, for backends that plan a
  // block on the host (cuDNN cuts runs of positions at the document starts); null when not known
  // (then such a backend leaves document blocks to the kernels). Kernels never read it.
  const int64_t* host_doc_starts = nullptr;
};

struct TensorView {
  void* data = nullptr;
  int64_t rows = 0;
  int32_t head_begin = 0;
  int32_t heads = 0;
  const int64_t* positions = nullptr;  // device memory, one token position per row (Q, K, V only)
  // The same positions in host memory, valid while the call runs, for backends that plan a block
  // on the host (cuDNN splits it by runs of positions); null when not known. Kernels never read it.
  const int64_t* host_positions = nullptr;
};

// One block of work: every batch element, query heads [head_begin, head_begin + head_count).
struct BlockProblem {
  InputType type = InputType::kBf16;
  int64_t batch = 1;
  int32_t dim = 128;
  float scale = 0;
  int32_t head_begin = 0;
  int32_t head_count = 0;
  int32_t group_size = 1;  // query heads per KV head
  DeviceMask mask;
};

// Copies rows and a head range between [batch][rows][heads][dim] tensors of element size
// `elem_bytes` (2 or 4): for b < batch, i < count, h < copy_heads:
//   dst[b][dst_row0 + i][dst_head0 + h][:] = src[b][src_rows[i]][src_head0 + h][:]
// where src_rows is a device array of `count` row indices (nullptr: rows src_row0 + i).
// src_rows_total / dst_rows_total and src_heads / dst_heads give the tensors' full shapes.
struct RowCopy {
  const void* src = nullptr;
  void* dst = nullptr;
  int32_t elem_bytes = 2;
  int64_t batch = 1;
  int32_t dim = 0;
  int64_t count = 0;
  const int64_t* src_rows = nullptr;
  int64_t src_row0 = 0, src_rows_total = 0;
  int64_t dst_row0 = 0, dst_rows_total = 0;
  int32_t src_head0 = 0, src_heads = 0;
  int32_t dst_head0 = 0, dst_heads = 0;
  int32_t copy_heads = 0;
};
}  // namespace meshplan::exec
