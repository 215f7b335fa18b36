#include "step/step_time.h"

#include <algorithm>
#include <cmath>

#include "core/cost/gemm_time.h"
#include "core/plan/plan.h"
#include "planner/comm_model.h"
#include "step/model_shapes.h"

namespace meshplan::step {
namespace {

constexpr double kBf16Bytes = 2;
// Element-wise kernels of one layer besides the GEMMs and attention (both norms, rotary, both
// residual adds, the activation), forward and backward each.
constexpr int kElementwiseKernelsPerPass = 6;
// Megatron's default gradient bucket: max(40M, 1M x DP size) parameters
// (megatron/core/distributed/distributed_data_parallel.py, bucket_size).
constexpr double kBucketParams = 40e6;
constexpr double kBucketParamsPerRank = 1e6;
// Adam on an fp32 shard: read the fp32 gradient, master weight and both moments, write the master
// weight, both moments and the bf16 parameter (4 x 4 + 3 x 4 + 2 bytes), then zero the gradient.
constexpr double kOptimizerBytesPerParam = 30;
constexpr double kGradZeroBytesPerParam = 4;

// The job's GPUs in Megatron's order; dims "tp", "cp", "dp", "pp". `merge_cp_dp` makes CP x DP
// one dimension "dpcp" (the distributed optimizer's group).
Placement JobPlacement(const StepOptions& o, bool merge_cp_dp) {
  std::vector<RankDim> dims = {{"tp", o.tp}};
  if (merge_cp_dp) {
    dims.push_back({"dpcp", o.cp * o.dp});
  } else {
    dims.push_back({"cp", o.cp});
    dims.push_back({"dp", o.dp});
  }
  dims.push_back({"pp", o.pp});
  return Placement(dims, CanonicalPlacement(dims));
}

// Forward and backward of one layer's element-wise work per token on one GPU, in HBM bytes
// (docs/training-step.md lists each kernel's reads and writes).
struct PassBytes {
  double forward = 0, backward = 0;
};
PassBytes ElementwiseBytesPerToken(const ModelConfig& m, int64_t tp, DType gemm_dtype) {
  const double h = static_cast<double>(m.hidden_size);
  const double q = static_cast<double>(QueryWidth(m));
  const double kv = static_cast<double>(KvWidth(m));
  const double f = static_cast<double>(m.intermediate_size);
  const double t = static_cast<double>(tp);
  PassBytes b;
  // Forward: two norms (read, write: 4h), two residual adds (read two, write one: 6h), rotary on
  // Q and K (read, write), the activation (gated: read gate and up, write one: 6f; else 4f).
  b.forward = 2 * 4 * h + 2 * 6 * h + 4 * (q + kv) + (m.gated_mlp ? 6 : 4) * f;
  // Backward: two norms (read x and dy, write dx: 6h), two gradient sums at the residuals (6h),
  // rotary's inverse, the activation (gated: read gate, up and dy, write both grads: 10f; else 6f).
  b.backward = 2 * 6 * h + 2 * 6 * h + 4 * (q + kv) + (m.gated_mlp ? 10 : 6) * f;
  if (gemm_dtype == DType::kFp8) {
    // TransformerEngine's FP8 casts: each GEMM input written in FP8 and transposed (2 bytes per
    // element; the norms fuse their casts, the output projection's and FC2's inputs are read
    // again: 2 more), each output gradient read and written in FP8 and transposed (4 bytes).
    b.forward += 2 * h + 2 * h + 4 * q + 4 * f;
    b.backward += 4 * (q + 2 * kv) + 4 * h + 4 * static_cast<double>(Fc1Width(m)) + 4 * h;
  }
  b.forward /= t;
  b.backward /= t;
  return b;
}

}  // namespace

StepTime TimeStep(const ModelConfig& m, const StepOptions& o, const Topology& cluster, int64_t seq,
                  const AttentionSeconds& attention) {
  const GpuSpec& gpu = cluster.gpu;
  const int64_t tokens = o.micro_batch * seq / o.cp;
  const double n = static_cast<double>(tokens);
  const int64_t stage_layers = (m.layers + o.pp - 1) / o.pp;  // the busiest stage's
  const double layers = static_cast<double>(stage_layers);
  const double per_layer_share = layers / static_cast<double>(m.layers);

  // GEMMs: each forward GEMM is run again twice in the backward (input gradient, weight
  // gradient) on the same FLOPs, with the shapes transposed.
  // A whole step sustains step_kernel_rate_fraction of its kernels' rates alone (GpuSpec): every
  // kernel's time below is stretched by its inverse, the communication's is not.
  const double stretch = 1.0 / gpu.step_kernel_rate_fraction;
  const LayerGemms g = LayerForwardGemms(m, tokens, o.tp);
  double gemm_fwd = 0, gemm_bwd = 0;
  for (const GemmShape& s : {g.qkv, g.proj, g.fc1, g.fc2}) {
    gemm_fwd += GemmSeconds(gpu, s, o.gemm_dtype);
    gemm_bwd += GemmSeconds(gpu, {s.m, s.k, s.n}, o.gemm_dtype) +
                GemmSeconds(gpu, {s.k, s.n, s.m}, o.gemm_dtype);
  }
  const PassBytes ew = ElementwiseBytesPerToken(m, o.tp, o.gemm_dtype);
  const double launches = kElementwiseKernelsPerPass * gpu.launch_overhead_s;
  gemm_fwd *= stretch;
  gemm_bwd *= stretch;
  const double ew_fwd = stretch * (ew.forward * n / gpu.hbm_bytes_per_s + launches);
  const double ew_bwd = stretch * (ew.backward * n / gpu.hbm_bytes_per_s + launches);

  // Sequence parallelism: per layer, forward all-gather, reduce-scatter, all-gather,
  // reduce-scatter of the hidden states (each rank's shard: tokens / tp x hidden); backward the
  // reverse plus the all-gathers of the saved inputs again for the weight gradients.
  double tp_fwd = 0, tp_bwd = 0;
  planner::CommModel comm(cluster);
  if (o.tp > 1) {
    const Placement job = JobPlacement(o, false);
    const double shard =
        n / static_cast<double>(o.tp) * static_cast<double>(m.hidden_size) * kBf16Bytes;
    const double one = comm.RingCollective(job, 0, shard, nullptr);
    tp_fwd = 4 * one;
    tp_bwd = 6 * one;
    if (o.tp_comm_overlap) {
      tp_fwd = std::max(0.0, tp_fwd - gemm_fwd);
      tp_bwd = std::max(0.0, tp_bwd - gemm_bwd);
    }
  }

  // Per micro-batch on one stage. The last stage adds the output layer and the loss (the first
  // stage's embedding lookup is a gather of tokens x hidden / tp: left out, it is the smaller).
  const double attn = stretch * attention.forward_backward_s * per_layer_share;
  const double attn_fwd = stretch * attention.forward_s * per_layer_share;
  double stage_gemm = layers * (gemm_fwd + gemm_bwd);
  double stage_ew = layers * (ew_fwd + ew_bwd);
  const GemmShape logits = LogitsGemm(m, tokens, o.tp);
  stage_gemm += stretch * (GemmSeconds(gpu, logits, o.gemm_dtype) +
                           GemmSeconds(gpu, {logits.m, logits.k, logits.n}, o.gemm_dtype) +
                           GemmSeconds(gpu, {logits.k, logits.n, logits.m}, o.gemm_dtype));
  // The loss: bf16 logits read and fp32 softmax written forward, read and the gradient written
  // backward: 12 bytes per logit.
  stage_ew += stretch * 12 * n * static_cast<double>(m.vocab_size) / static_cast<double>(o.tp) /
              gpu.hbm_bytes_per_s;
  const double stage_tp = layers * (tp_fwd + tp_bwd);
  double stage_recompute = 0;
  if (o.recompute == Recompute::kSelective) stage_recompute = attn_fwd;
  if (o.recompute == Recompute::kFull)
    stage_recompute = attn_fwd + layers * (gemm_fwd + ew_fwd + tp_fwd);
  double stage_p2p = 0;
  if (o.pp > 1) {
    // Each micro-batch's activations forward and gradients backward cross each stage boundary:
    // the sequence-parallel shard, tokens / tp x hidden; interleaving crosses vpp times as many.
    const Placement job = JobPlacement(o, false);
    const double bytes =
        n / static_cast<double>(o.tp) * static_cast<double>(m.hidden_size) * kBf16Bytes;
    const double crossing = comm.RingShift(job, 3, bytes, 1, nullptr);
    const double vpp = static_cast<double>(o.vpp);
    if (o.p2p_overlapped()) {
      // Megatron's overlapped interleaved schedule posts each crossing beside the next model
      // chunk's compute (a 1/vpp share of the stage's forward or backward) and waits for it
      // before that chunk's successor: a crossing shows only where it outlasts the chunk.
      const double stage_fwd = attn_fwd + layers * (gemm_fwd + ew_fwd + tp_fwd);
      const double stage_bwd =
          attn + stage_gemm + stage_ew + stage_tp + stage_recompute - stage_fwd;
      stage_p2p = vpp * (std::max(0.0, crossing - stage_fwd / vpp) +
                         std::max(0.0, crossing - stage_bwd / vpp));
    } else {
      stage_p2p = 2 * vpp * crossing;
    }
  }

  StepTime t;
  t.micro_batches = o.micro_batches();
  const double mb = static_cast<double>(t.micro_batches);
  t.attention_s = mb * attn;
  t.gemm_s = mb * stage_gemm;
  t.elementwise_s = mb * stage_ew;
  t.tp_comm_s = mb * stage_tp;
  t.recompute_s = mb * stage_recompute;
  t.pp_p2p_s = mb * stage_p2p;
  const double stage_s = attn + stage_gemm + stage_ew + stage_tp + stage_recompute + stage_p2p;
  t.pp_bubble_s = static_cast<double>(o.pp - 1) / static_cast<double>(o.vpp) * stage_s;

  // The distributed optimizer: gradients (fp32, or bf16) reduce-scattered over DP x CP as the last
  // micro-batch's backward produces them (overlap_grad_reduce), bf16 parameters all-gathered
  // while the first micro-batch's forward needs them (overlap_param_gather); a bucket at least
  // of each is exposed.
  const double params = (LayerParams(m) * layers + EmbeddingParams(m)) / static_cast<double>(o.tp);
  const int64_t shards = o.cp * o.dp;
  if (shards > 1) {
    const Placement job = JobPlacement(o, true);
    const double shard_params = params / static_cast<double>(shards);
    const double rs = comm.RingCollective(job, 1, shard_params * o.grad_bytes_per_param(), nullptr);
    const double ag = comm.RingCollective(job, 1, shard_params * kBf16Bytes, nullptr);
    const double bucket =
        std::max(kBucketParams, kBucketParamsPerRank * static_cast<double>(shards));
    const double buckets = std::max(1.0, std::ceil(params / bucket));
    const double first_forward = layers * (gemm_fwd + ew_fwd + tp_fwd) + attn_fwd;
    const double last_backward = stage_s - first_forward;
    t.dp_exposed_s =
        std::max(rs / buckets, rs - last_backward) + std::max(ag / buckets, ag - first_forward);
  }
  t.optimizer_s = stretch *
                  (kOptimizerBytesPerParam * params / static_cast<double>(shards) +
                   kGradZeroBytesPerParam * params) /
                  gpu.hbm_bytes_per_s;
  return t;
}

}  // namespace meshplan::step
