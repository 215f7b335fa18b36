// Block attention through cuDNN's fused attention (SDPA, FlashAttention-class kernels), behind
// the same contract as the own kernels (executor/cuda/attention_kernels.h): Forward folds the
// block's (O, LSE) into the fp32 accumulators, Backward adds the block's dQ, dK, dV into fp32
// accumulators from the final LSE and delta.
//
// A block is split on the host into pieces cuDNN computes exactly
// (executor/kernels/attention_pieces.h): runs of consecutive token positions, or one progression
// of a common step (striped layouts), under a full mask, a causal corner-aligned mask or, for
// sliding windows (window:W), a diagonal band (cuDNN's diagonal alignment with left and right
// bounds; cudnn_attention.cc says what the frontend does with them). Document masks (docs,
// docs-full) cut those runs at the document starts, which the block's mask carries in host
// memory (DeviceMask::host_doc_starts, set by the engine): per pair of cut runs in one document a
// full rectangle (docs-full) or the causal pieces (docs), nothing across documents; no ragged
// layout. A block whose rows as they lie need more than 16 pieces but, put in position order,
// need at most 16 (a whole sequence in zigzag order, as the all-to-all schemes and the gathered K,
// V hold it: one causal piece instead of 136 for 8 ranks) is gathered into position order first
// (SplitInPositionOrder): Q, K, V (dO) and the accumulators copied by their runs of rows into
// dense buffers of the computed heads, the pieces run there, the accumulators copied back; at
// most 64 runs a side (zigzag up to 32 ranks; a whole striped sequence, a run per row, is not
// gathered). Blocks not expressible either way (prefix masks, documents without host starts,
// more than 16 pieces even in order, as a block over many short documents has) are not Supported
// and run on the own kernels. The gathered path has not run on a GPU yet (issue 51). The band and
// document pieces' graphs are validated on the host (tests/executor/cuda/cudnn_graph_test.cc), but
// their numerics and speed have not run on a GPU yet: they wait for a lent device
// (tests/cuda/engine_test.cc). Each piece runs cuDNN into 16-bit temporaries that glue kernels
// fold into the accumulators (executor/cuda/cudnn_glue.h); cuDNN's backward, which derives delta
// from an O it is given, gets a pseudo-O whose rowsum with dO is the engine's delta.
//
// cuDNN is opened at run time (dlopen of libcudnn.so.9 by the frontend), so a program built with
// this path starts on machines without cuDNN; CreateCudnnAttention then says why it is missing.
// cuDNN graphs are built once per shape (sizes, strides, mask, pass) and cached for the object's
// life. One object per device; every call comes from one host thread at a time.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <string>

#include "core/base/status.h"
#include "executor/device/kernel_args.h"

namespace meshplan::exec::cuda {

class CudnnAttention {
 public:
  virtual ~CudnnAttention() = default;
  // "cuDNN 9.19.0 (frontend 1.32.0)"
  virtual std::string Describe() const = 0;
  // Whether Forward/Backward can compute this block: bf16/fp16, a head dim cuDNN takes, heads
  // that map onto cuDNN's GQA grouping, host positions on q and k (TensorView::host_positions),
  // an expressible mask (documents: with host starts, DeviceMask::host_doc_starts), and cuDNN
  // graphs that build for every piece (built and cached here).
  virtual bool Supports(const BlockProblem& p, const TensorView& q, const TensorView& k,
                        bool backward) = 0;
  virtual Status Forward(const BlockProblem& p, const TensorView& q, const TensorView& k,
                         const TensorView& v, const TensorView& o, const TensorView& lse,
                         cudaStream_t stream) = 0;
  virtual Status Backward(const BlockProblem& p, const TensorView& q, const TensorView& k,
                          const TensorView& v, const TensorView& d_o, const TensorView& lse,
                          const TensorView& delta, const TensorView& dq, const TensorView& dk,
                          const TensorView& dv, cudaStream_t stream) = 0;
  // Pieces computed so far (for reports: how much of a run cuDNN did).
  virtual int64_t pieces_run() const = 0;
  // Blocks computed on their rows gathered into position order so far (for reports).
  virtual int64_t blocks_gathered() const = 0;
  // cuDNN graphs built (or found unbuildable) so far, one per distinct piece shape (for reports
  // and tests: a second run of the same plan on the same object builds none).
  virtual int64_t graphs_built() const = 0;
};

// Opens cuDNN and makes a handle on `device` (made current by the caller). Fails, saying why,
// when the build left cuDNN out, libcudnn.so.9 cannot be opened, or the handle cannot be made.
Result<std::unique_ptr<CudnnAttention>> CreateCudnnAttention(int device);

// Describes the cuDNN graph of every piece of the block and has the frontend validate it on the
// host (shapes, strides, types, mask attributes) for GPUs of compute capability sm_version (90:
// Hopper), with no device and no handle: what can be checked of the cuDNN path on a machine
// without a GPU. Returns the number of pieces. Needs libcudnn.so.9 (to ask its version), and
// fails saying why when it cannot be opened.
Result<int32_t> ValidateCudnnBlockOnHost(const BlockProblem& p, const TensorView& q,
                                         const TensorView& k, const TensorView* d_o, bool backward,
                                         int32_t sm_version = 90);

}  // namespace meshplan::exec::cuda
