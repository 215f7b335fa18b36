// Public launchers of the block kernels: argument checks and the choice of kernel family.
#include "executor/cuda/attention_kernels.h"
#include "executor/cuda/kernels/internal.h"

namespace meshplan::exec::cuda {
namespace {

// Whether a view holds the global heads [first, first + count).
bool Holds(const TensorView& t, int64_t first, int64_t count) {
  return t.data != nullptr && t.heads >= 0 && t.head_begin <= first &&
         first + count <= int64_t{t.head_begin} + t.heads;
}

// Checks shared by forward and backward. Sets `empty` when there is nothing to compute.
cudaError_t CheckProblem(const BlockProblem& p, const TensorView& q, const TensorView& k,
                         const TensorView& v, bool& empty) {
  empty = false;
  if (p.batch < 0 || p.head_count < 0 || p.head_begin < 0 || p.group_size < 1 || p.dim < 1)
    return cudaErrorInvalidValue;
  if (p.type != InputType::kBf16 && p.type != InputType::kFp16) return cudaErrorInvalidValue;
  const MaskParams& mask = p.mask.params;
  if (!IsMaskKind(static_cast<int32_t>(mask.kind))) return cudaErrorInvalidValue;
  if (mask.kind == MaskKind::kPrefix && mask.prefix < 1) return cudaErrorInvalidValue;
  if (HasDocuments(mask.kind) && (p.mask.doc_starts == nullptr || p.mask.num_docs < 1))
    return cudaErrorInvalidValue;
  if (q.rows < 0 || k.rows < 0 || v.rows != k.rows) return cudaErrorInvalidValue;
  if (p.batch == 0 || p.head_count == 0 || q.rows == 0 || k.rows == 0) {
    empty = true;  // no query row, or no key: the block contributes nothing
    return cudaSuccess;
  }
  const int32_t kv_first = p.head_begin / p.group_size;
  const int32_t kv_count = (p.head_begin + p.head_count - 1) / p.group_size - kv_first + 1;
  if (!Holds(q, p.head_begin, p.head_count) || !Holds(k, kv_first, kv_count) ||
      !Holds(v, kv_first, kv_count)) {
    return cudaErrorInvalidValue;
  }
  return cudaSuccess;
}

// Picks the kernel family: sets `tensor_core`.
cudaError_t ChoosePath(const BlockProblem& p, KernelPath path, bool& tensor_core) {
  switch (path) {
    case KernelPath::kTensorCore:
      if (!TensorCorePathSupports(p)) return cudaErrorNotSupported;
      tensor_core = true;
      return cudaSuccess;
    case KernelPath::kSimt:
      tensor_core = false;
      break;
    case KernelPath::kAuto:
    default:
      tensor_core = TensorCorePathSupports(p);
      if (tensor_core) return cudaSuccess;
      break;
  }
  return p.dim <= kern::kSimtMaxDim ? cudaSuccess : cudaErrorInvalidValue;
}

}  // namespace

bool TensorCorePathSupports(const BlockProblem& p) {
  if (p.dim != 64 && p.dim != 128) return false;
  if (p.type != InputType::kBf16 && p.type != InputType::kFp16) return false;
  int device = 0, major = 0, smem_optin = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) !=
          cudaSuccess) {
    (void)cudaGetLastError();  // the failure was this query's; do not leave it to the next launch
    return false;
  }
  const size_t need = kern::TcForwardSharedBytes(p.dim) > kern::TcBackwardSharedBytes(p.dim)
                          ? kern::TcForwardSharedBytes(p.dim)
                          : kern::TcBackwardSharedBytes(p.dim);
  return major >= 8 && static_cast<size_t>(smem_optin) >= need;
}

cudaError_t LaunchBlockForward(const BlockProblem& p, const TensorView& q, const TensorView& k,
                               const TensorView& v, const TensorView& o, const TensorView& lse,
                               KernelPath path, cudaStream_t stream) {
  bool empty = false;
  cudaError_t err = CheckProblem(p, q, k, v, empty);
  if (err != cudaSuccess || empty) return err;
  if (o.rows != q.rows || lse.rows != q.rows || !Holds(o, p.head_begin, p.head_count) ||
      !Holds(lse, p.head_begin, p.head_count)) {
    return cudaErrorInvalidValue;
  }
  bool tensor_core = false;
  err = ChoosePath(p, path, tensor_core);
  if (err != cudaSuccess) return err;
  return tensor_core ? kern::TcForward(p, q, k, v, o, lse, stream)
                     : kern::SimtForward(p, q, k, v, o, lse, stream);
}

cudaError_t LaunchBlockBackward(const BlockProblem& p, const TensorView& q, const TensorView& k,
                                const TensorView& v, const TensorView& d_o, const TensorView& lse,
                                const TensorView& delta, const TensorView& dq, const TensorView& dk,
                                const TensorView& dv, KernelPath path, cudaStream_t stream) {
  bool empty = false;
  cudaError_t err = CheckProblem(p, q, k, v, empty);
  if (err != cudaSuccess || empty) return err;
  const int32_t kv_first = p.head_begin / p.group_size;
  const int32_t kv_count = (p.head_begin + p.head_count - 1) / p.group_size - kv_first + 1;
  if (d_o.rows != q.rows || lse.rows != q.rows || delta.rows != q.rows || dq.rows != q.rows ||
      dk.rows != k.rows || dv.rows != k.rows || !Holds(d_o, p.head_begin, p.head_count) ||
      !Holds(lse, p.head_begin, p.head_count) || !Holds(delta, p.head_begin, p.head_count) ||
      !Holds(dq, p.head_begin, p.head_count) || !Holds(dk, kv_first, kv_count) ||
      !Holds(dv, kv_first, kv_count)) {
    return cudaErrorInvalidValue;
  }
  bool tensor_core = false;
  err = ChoosePath(p, path, tensor_core);
  if (err != cudaSuccess) return err;
  return tensor_core ? kern::TcBackward(p, q, k, v, d_o, lse, delta, dq, dk, dv, stream)
                     : kern::SimtBackward(p, q, k, v, d_o, lse, delta, dq, dk, dv, stream);
}

}  // namespace meshplan::exec::cuda
