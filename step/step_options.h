// One whole-training-step question beside the context-parallel plan: the parallel degrees of a
// Megatron-style job (TP innermost, then CP, then DP, then PP), its batch, the GEMMs' dtype, the
// activation recompute and the TP communication overlap (docs/training-step.md).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/base/dtype.h"
#include "core/base/status.h"

namespace meshplan::step {

// Megatron's activation recompute: none; `selective` (--recompute-granularity selective, its
// default module core_attn: the attention kernel runs its forward again in the backward); `full`
// (--recompute-granularity full --recompute-method uniform --recompute-num-layers 1: each layer
// keeps only its input and runs its whole forward again).
enum class Recompute { kNone, kSelective, kFull };
std::string_view RecomputeName(Recompute recompute);
// "none", "selective", "full"; anything else is an error naming --recompute.
Result<Recompute> ParseRecompute(std::string_view text);

struct StepOptions {
  int64_t tp = 1;                   // tensor parallel, with sequence parallelism when above 1
  int64_t cp = 1;                   // context parallel: the planner's group
  int64_t dp = 1;                   // data parallel (the distributed optimizer shards over DP x CP)
  int64_t pp = 1;                   // pipeline stages (1F1B)
  int64_t vpp = 1;                  // virtual stages per pipeline rank (interleaved 1F1B)
  int64_t micro_batch = 1;          // sequences per micro-batch
  int64_t global_batch = 0;         // sequences per step; 0: one micro-batch per DP rank
  DType gemm_dtype = DType::kBf16;  // fp8: TransformerEngine's recipe (attention stays bf16)
  Recompute recompute = Recompute::kNone;
  bool tp_comm_overlap = false;  // TE's userbuffers: TP collectives hidden behind the GEMMs
  // Megatron's overlap_p2p_comm: with the interleaved schedule (vpp > 1) each stage-to-stage send
  // and receive runs beside the next model chunk's compute. Megatron-LM turns it on by default
  // there (--no-overlap-p2p-communication turns it off) and off without interleaving
  // (megatron/training/arguments.py at d98e8a6, lines 1000-1012 and 3118-3120).
  bool overlap_p2p_comm = true;
  bool p2p_overlapped() const { return overlap_p2p_comm && vpp > 1; }
  // Megatron's --grad-reduce-in-bf16: the gradient buffer, and its reduce-scatter, in bf16 (2
  // bytes a parameter) rather than fp32 (4, Megatron's default).
  bool grad_reduce_bf16 = false;
  double grad_bytes_per_param() const { return grad_reduce_bf16 ? 2 : 4; }
  // GPU memory held back for the CUDA context, NCCL's buffers and the allocator's fragmentation.
  double reserve_bytes = 0;

  int64_t gpus() const { return tp * cp * dp * pp; }
  int64_t global_batch_or_default() const {
    return global_batch > 0 ? global_batch : dp * micro_batch;
  }
  // Micro-batches each pipeline runs per step: global batch / (DP x micro batch).
  int64_t micro_batches() const { return global_batch_or_default() / (dp * micro_batch); }
  // "4 x 4 x 8 x 1": TP x CP x DP x PP, as tables head them.
  std::string Degrees() const;
  // "TP 4 x CP 4 x DP 8 x PP 1 (128 GPUs), micro-batch 1 x 32, bf16 GEMMs, recompute none"
  std::string Describe() const;
};

// Layers per pipeline stage as Megatron splits them: equal stages when PP divides the layers;
// otherwise every middle stage holds ceil(L / PP) and the first and last share the rest
// (--decoder-first-pipeline-num-layers, --decoder-last-pipeline-num-layers), the first the larger.
struct StageLayers {
  int64_t first = 0, middle = 0, last = 0;
  bool even() const { return first == middle && middle == last; }
  int64_t busiest() const { return middle; }
};
// Errors (naming --pp): more stages than layers, or a split that leaves the first or last stage
// no layer or more than a middle one; with --vpp > 1, stages x virtual stages must divide the
// layers.
Result<StageLayers> SplitLayers(int64_t layers, int64_t pp, int64_t vpp);

// Self-consistency alone (degrees and batches at least 1; the global batch a multiple of DP x
// micro batch; vpp > 1 only with pp > 1); errors name the flag.
Status ValidateStepOptions(const StepOptions& options);

}  // namespace meshplan::step
