// CreateCudnnAttention of a build without cuDNN or its frontend headers (cmake/Cuda.cmake).
#include "executor/cuda/cudnn_attention.h"

namespace meshplan::exec::cuda {

namespace {
Status Missing() {
  return Status::Invalid(
      "this meshplan was built without the cuDNN path (no cudnn.h in the CUDA toolkit, or no cuDNN "
      "frontend headers: bash tools/fetch-cudnn-frontend.sh, then rebuild)");
}
}  // namespace

Result<std::unique_ptr<CudnnAttention>> CreateCudnnAttention(int /*device*/) { return Missing(); }

Result<int32_t> ValidateCudnnBlockOnHost(const BlockProblem&, const TensorView&, const TensorView&,
                                         const TensorView*, bool, int32_t) {
  return Missing();
}

}  // namespace meshplan::exec::cuda
