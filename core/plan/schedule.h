// The expanded per-rank program of a plan: what every rank computes, sends and receives, and in
// which order. The planner's strategies produce it, the simulator times it, the executor runs it.
//
// Conventions
// - Shards are those of Schedule::layout (the compute layout). Q-side tensors (Q, O, LSE, dO, D,
//   dQ) of a message name their shard in q_shard; KV-side tensors (K, V, dK, dV) in kv_shard.
// - A forward Compute op of block (i, j) folds its result into the rank's running (O, LSE)
//   accumulator for Q shard i (online softmax); a backward Compute adds into the rank's partial
//   dQ for shard i and partial dK, dV for shard j. Compute ops cover the heads
//   [head_begin, head_begin + head_count) of the query heads (GQA maps them to KV heads).
// - Send of an accumulator hands it over: the sender no longer owns that partial. A Recv of a
//   partial (O+LSE, dQ, dK+dV) is followed by a Merge op that folds it into the local one.
// - Ops on one stream of a rank start in program order; an op also waits for its deps. Sends
//   and receives between two ranks pair up in program order (the k-th send from A to B is the
//   k-th receive on B from A) and carry the same tag, tensors and bytes.
// - Collectives name a group; every member issues the same collectives in the same order.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/plan/plan.h"
#include "core/sequence/layout.h"

namespace meshplan {

enum class OpKind : uint8_t {
  kCompute,
  kMerge,
  kSend,
  kRecv,
  kAllGather,
  kReduceScatter,
  kAllToAll
};
enum class StreamId : uint8_t { kCompute, kSend, kRecv, kCollective };
enum class Phase : uint8_t { kForward, kBackward };
std::string_view OpKindName(OpKind kind);
std::string_view StreamName(StreamId stream);

// Bits naming the tensors a message or merge carries.
enum TensorBit : uint16_t {
  kTensorQ = 1 << 0,
  kTensorK = 1 << 1,
  kTensorV = 1 << 2,
  kTensorO = 1 << 3,    // output (a partial in chains, the final output in all-to-all back)
  kTensorLse = 1 << 4,  // log-sum-exp, fp32
  kTensorDO = 1 << 5,
  kTensorD = 1 << 6,  // rowsum(dO * O), fp32
  kTensorDQ = 1 << 7,
  kTensorDK = 1 << 8,
  kTensorDV = 1 << 9,
};
inline constexpr uint16_t kTensorKV = kTensorK | kTensorV;
inline constexpr uint16_t kTensorDKV = kTensorDK | kTensorDV;
// "Q+dO+LSE+D"
std::string TensorNames(uint16_t tensors);

// All-to-all direction: sequence-sharded -> head-sharded, or back.
enum class A2ADirection : uint8_t { kSeqToHeads, kHeadsToSeq };

struct Op {
  OpKind kind = OpKind::kCompute;
  Phase phase = Phase::kForward;
  StreamId stream = StreamId::kCompute;
  A2ADirection a2a = A2ADirection::kSeqToHeads;  // kAllToAll only
  uint16_t tensors = 0;  // payload of Send/Recv/collectives; what a Merge folds in
  // Compute: how many block kernels this op stands for: 1 from the planner; more in the
  // simulator's timing view, where runs of blocks that time as one are merged
  // (simulator/coalesce.h).
  uint16_t kernels = 1;
  int32_t peer = -1;       // Send/Recv: the other rank
  int32_t group = -1;      // collectives: index into Schedule::groups
  int32_t q_shard = -1;    // Compute: block row; messages/merges: shard of Q-side tensors
  int32_t kv_shard = -1;   // Compute: block column; messages/merges: shard of KV-side tensors
  int32_t head_begin = 0;  // query heads covered
  int32_t head_count = 0;
  int32_t step = -1;  // step of step-structured schedules (Mesh, rings), else -1
  int32_t tag = 0;    // Send/Recv pairing check
  // Compute: the block's cut rows per visible pair (BlockWork::CutRowsPerPair,
  // core/sequence/layout.h): along a cut of the mask kernels work tile by tile with a per-pair mask
  // rather than in dense products, which costs GpuSpec::cut_row_extra_pairs more pairs per cut row.
  float cut_rows_per_pair = 0;
  // Send, collectives: bytes this rank sends; Recv: bytes received. Compute: the bytes of the
  // partials a ring step after the first writes out and merges (RingStepPartialSeconds), else 0.
  int64_t bytes = 0;
  // Compute: of `bytes`, those of a forward block whose causal diagonal is strict (its first
  // query row sees none of its keys), which a library without the diagonal's offset merges
  // through a slice and a copy (SlicedMergeSeconds, core/cost/kernel_time.h), else 0.
  int64_t sliced_bytes = 0;
  double flops = 0;        // Compute: FLOPs (mask-aware; backward includes recomputation)
  uint32_t dep_begin = 0;  // deps are RankProgram::deps[dep_begin, dep_begin + dep_count)
  uint32_t dep_count = 0;
};

struct RankProgram {
  std::vector<Op> ops;
  std::vector<uint32_t> deps;  // indices into ops (same rank), each < the depending op's index

  // Appends op with the given deps; returns its index.
  uint32_t Add(Op op, std::initializer_list<uint32_t> op_deps = {});
  uint32_t Add(Op op, const std::vector<uint32_t>& op_deps);
};

struct Schedule {
  Scheme scheme;
  int64_t num_ranks = 0;
  ShardLayout layout;  // compute layout; rank r's input is sub-shard r
  // How the scheme's kernels meet packed documents (the kernel shape's tile fills,
  // MakeKernelShape); the scheme's estimate states the same (PlanContext::ShapeOf).
  KernelCalls kernel_calls = KernelCalls::kBlocks;
  std::vector<std::vector<int32_t>> groups;  // collective groups (ranks, in ring order)
  std::vector<RankProgram> ranks;

  int64_t TotalOps() const;
};

}  // namespace meshplan
