#include "executor/calibration/engine_schedules.h"

#include <algorithm>
#include <memory>
#include <string>

#include "core/cost/attention_flops.h"

namespace meshplan::exec {
namespace {

// Bytes of `tensors` (one bit per input tensor, fp32 for O, LSE and the gradients) over `rows`
// rows of `heads` heads.
int64_t MessageBytes(uint16_t tensors, int64_t rows, int64_t heads, int64_t head_dim,
                     InputType type) {
  int64_t bytes = 0;
  for (uint16_t bit = 1; bit != 0 && bit <= kTensorDV; bit = static_cast<uint16_t>(bit << 1)) {
    if (!(tensors & bit)) continue;
    const bool input = bit == kTensorQ || bit == kTensorK || bit == kTensorV || bit == kTensorDO;
    const int64_t dim = bit == kTensorLse || bit == kTensorD ? 1 : head_dim;
    bytes += rows * heads * dim * (input ? InputBytes(type) : 4);
  }
  return bytes;
}

// Builds a schedule's programs, pairing each send with its receive (one tag per message between
// two ranks, counted up) so that both ends carry the same tag, tensors and bytes.
class Builder {
 public:
  Builder(int ranks, const ShardLayout& layout) {
    schedule_.scheme = Scheme("calibration");
    schedule_.num_ranks = ranks;
    schedule_.layout = layout;
    schedule_.ranks.resize(static_cast<size_t>(ranks));
    timed_.resize(static_cast<size_t>(ranks));
  }

  RankProgram& Program(int rank) { return schedule_.ranks[static_cast<size_t>(rank)]; }

  // `message` (kind, stream and peer are set here) from src to dst, the send after `send_deps`
  // and the receive after `recv_deps`; returns the receive's index.
  uint32_t Send(int src, int dst, Op message, std::vector<uint32_t> send_deps = {},
                std::vector<uint32_t> recv_deps = {}) {
    message.tag = next_tag_++;
    message.kind = OpKind::kSend;
    message.stream = StreamId::kSend;
    message.peer = dst;
    Program(src).Add(message, send_deps);
    message.kind = OpKind::kRecv;
    message.stream = StreamId::kRecv;
    message.peer = src;
    return Program(dst).Add(message, recv_deps);
  }

  void Time(int rank, uint32_t op) { timed_[static_cast<size_t>(rank)].push_back(op); }

  CalibrationRun Finish(const Workload& workload) {
    CalibrationRun run;
    run.workload = workload;
    run.schedule = std::move(schedule_);
    run.timed = std::move(timed_);
    return run;
  }

 private:
  Schedule schedule_;
  std::vector<std::vector<uint32_t>> timed_;
  int32_t next_tag_ = 1;
};

Workload BaseWorkload(int64_t seq_len, int64_t heads, int64_t head_dim, const Mask& mask,
                      bool backward, InputType type) {
  Workload w;
  w.batch = 1;
  w.seq_len = seq_len;
  w.q_heads = heads;
  w.kv_heads = heads;
  w.head_dim = head_dim;
  w.dtype = type == InputType::kFp32 ? DType::kFp32
                                     : (type == InputType::kFp16 ? DType::kFp16 : DType::kBf16);
  w.partial_dtype = DType::kFp32;
  w.mask = mask;
  w.pass = backward ? Pass::kForwardBackward : Pass::kForward;
  return w;
}

// Four chunks of n/4 tokens per shard: shard 0 holds chunks 0, 1, 4, 5 and shard 1 chunks 2, 3,
// 6, 7 (the chunked piece's keys and queries, calibration.h); shard s >= 2 chunks 4s .. 4s + 3.
ShardLayout ChunkedLayout(int64_t n, int64_t shards) {
  auto chunks = std::make_shared<BalancedChunks>();
  chunks->chunks_per_shard = kBalancedChunksPerShard;
  chunks->chunk_tokens = n / kBalancedChunksPerShard;
  chunks->chunks_of_shard = {0, 1, 4, 5, 2, 3, 6, 7};
  for (int64_t x = 8; x < 4 * shards; ++x) chunks->chunks_of_shard.push_back(x);
  chunks->owner.assign(static_cast<size_t>(4 * shards), 0);
  for (size_t i = 0; i < chunks->chunks_of_shard.size(); ++i)
    chunks->owner[static_cast<size_t>(chunks->chunks_of_shard[i])] = static_cast<int64_t>(i / 4);
  ShardLayout layout{Layout::kBalanced, n * shards, shards, 1};
  layout.balanced = chunks;
  return layout;
}

Status CheckRun(const Workload& w, const Schedule& s) {
  MESHPLAN_RETURN_IF_ERROR(w.Validate().WithContext("calibration run"));
  return s.layout.Validate(w.mask).WithContext("calibration run");
}

Op ComputeOp(Phase phase, int32_t q_shard, int32_t kv_shard, int64_t heads, double flops,
             double cut_rows_per_pair) {
  Op op;
  op.kind = OpKind::kCompute;
  op.phase = phase;
  op.stream = StreamId::kCompute;
  op.q_shard = q_shard;
  op.kv_shard = kv_shard;
  op.head_begin = 0;
  op.head_count = static_cast<int32_t>(heads);
  op.flops = phase == Phase::kBackward ? flops * kBackwardFlopsFactor : flops;
  op.cut_rows_per_pair = static_cast<float>(cut_rows_per_pair);
  return op;
}

Op MessageOp(uint16_t tensors, int32_t q_shard, int32_t kv_shard, int64_t bytes) {
  Op op;
  op.tensors = tensors;
  op.q_shard = q_shard;
  op.kv_shard = kv_shard;
  op.bytes = bytes;
  return op;
}

}  // namespace

Result<CalibrationRun> KernelRun(BlockPiece piece, int64_t n, int64_t heads, int64_t head_dim,
                                 bool backward, int ranks, int repeats, InputType type) {
  if (n < 4 || n % 4 != 0)
    return Status::Invalid("calibration run: block size must be a positive multiple of 4");
  if (ranks < 1 || repeats < 1 || heads < 1)
    return Status::Invalid("calibration run: ranks, repeats and heads must be at least 1");
  const bool two_shards = piece == BlockPiece::kPartial || piece == BlockPiece::kChunked;
  const int engine_ranks = two_shards ? std::max(ranks, 2) : ranks;
  const int first_computing = two_shards && ranks == 1 ? 1 : 0;
  const int64_t seq = n * engine_ranks;
  const Mask mask = piece == BlockPiece::kFull      ? Mask::Full()
                    : piece == BlockPiece::kPartial ? Mask::Window(3 * n / 2 + 1)
                                                    : Mask::Causal();
  const ShardLayout layout = piece == BlockPiece::kChunked
                                 ? ChunkedLayout(n, engine_ranks)
                                 : ShardLayout{Layout::kContiguous, seq, engine_ranks, 1};
  const Workload w = BaseWorkload(seq, heads, head_dim, mask, backward, type);
  const double flops = 4.0 * static_cast<double>(PieceVisiblePairs(piece, n)) *
                       static_cast<double>(heads) * static_cast<double>(head_dim);
  const double cut = PieceCutRowsPerPair(piece, n);
  Builder b(engine_ranks, layout);
  // The messages of two-shard blocks, before any compute: what each computing rank receives.
  std::vector<std::vector<uint32_t>> received(static_cast<size_t>(engine_ranks));
  if (two_shards) {
    const uint16_t q_side = static_cast<uint16_t>(backward ? kTensorQ | kTensorDO : kTensorQ);
    for (int r = first_computing; r < engine_ranks; ++r) {
      if (r != 0) {
        received[r].push_back(b.Send(
            0, r, MessageOp(kTensorKV, -1, 0, MessageBytes(kTensorKV, n, heads, head_dim, type))));
      }
    }
    for (int r = first_computing; r < engine_ranks; ++r) {
      if (r != 1) {
        received[r].push_back(
            b.Send(1, r, MessageOp(q_side, 1, -1, MessageBytes(q_side, n, heads, head_dim, type))));
      }
    }
  }
  for (int r = first_computing; r < engine_ranks; ++r) {
    const int32_t q_shard = two_shards ? 1 : r, kv_shard = two_shards ? 0 : r;
    RankProgram& program = b.Program(r);
    if (backward) {
      program.Add(ComputeOp(Phase::kForward, q_shard, kv_shard, heads, flops, cut), received[r]);
      for (int i = 0; i < repeats; ++i)
        b.Time(r, program.Add(ComputeOp(Phase::kBackward, q_shard, kv_shard, heads, flops, cut)));
    } else {
      for (int i = 0; i < repeats; ++i) {
        b.Time(r, program.Add(ComputeOp(Phase::kForward, q_shard, kv_shard, heads, flops, cut),
                              i == 0 ? received[r] : std::vector<uint32_t>{}));
      }
    }
  }
  CalibrationRun run = b.Finish(w);
  MESHPLAN_RETURN_IF_ERROR(CheckRun(run.workload, run.schedule));
  return run;
}

Result<CalibrationRun> MergeRun(int64_t n, int64_t heads, int64_t head_dim, int merges,
                                InputType type) {
  if (n < 1 || heads < 1 || merges < 1)
    return Status::Invalid("calibration run: merge rows, heads and merges must be at least 1");
  const Workload w = BaseWorkload(2 * n, heads, head_dim, Mask::Window(1), false, type);
  Builder b(2, ShardLayout{Layout::kContiguous, 2 * n, 2, 1});
  const double flops = 4.0 * static_cast<double>(n * heads * head_dim);  // n pairs: the diagonal
  const uint16_t qkv = kTensorQ | kTensorKV;
  const uint16_t partial = kTensorO | kTensorLse;
  const int64_t partial_bytes = MessageBytes(partial, n, heads, head_dim, type);
  // Rank 1 lends rank 0 its shard, then computes its own accumulator of it.
  const uint32_t inputs =
      b.Send(1, 0, MessageOp(qkv, 1, 1, MessageBytes(qkv, n, heads, head_dim, type)));
  b.Program(1).Add(ComputeOp(Phase::kForward, 1, 1, heads, flops, 0));
  for (int i = 0; i < merges; ++i) {
    const uint32_t compute =
        b.Program(0).Add(ComputeOp(Phase::kForward, 1, 1, heads, flops, 0), {inputs});
    const uint32_t arrived = b.Send(0, 1, MessageOp(partial, 1, -1, partial_bytes), {compute});
    Op merge = MessageOp(partial, 1, -1, 0);
    merge.kind = OpKind::kMerge;
    merge.stream = StreamId::kCompute;
    b.Time(1, b.Program(1).Add(merge, {arrived}));
  }
  CalibrationRun run = b.Finish(w);
  MESHPLAN_RETURN_IF_ERROR(CheckRun(run.workload, run.schedule));
  return run;
}

int64_t MessageRunBytes(int64_t bytes, int64_t head_dim, InputType type) {
  const int64_t row = head_dim * InputBytes(type);
  return std::max<int64_t>(1, bytes / row) * row;
}

Result<CalibrationRun> MessageRun(int64_t bytes, int64_t head_dim, int messages, InputType type) {
  if (bytes < 1 || head_dim < 1 || messages < 1)
    return Status::Invalid("calibration run: message bytes, head dim and count must be positive");
  const int64_t rows = MessageRunBytes(bytes, head_dim, type) / (head_dim * InputBytes(type));
  const Workload w = BaseWorkload(2 * rows, 1, head_dim, Mask::Full(), false, type);
  Builder b(2, ShardLayout{Layout::kContiguous, 2 * rows, 2, 1});
  // Each message waits for the one before it on both ends: the engine issues the consecutive
  // messages of a stream whose deps are met as one exchange step (one NCCL group), which would
  // begin every op of the step before the first copy and time none of them alone.
  std::vector<uint32_t> send_deps, recv_deps;
  for (int i = 0; i < messages; ++i) {
    const uint32_t recv =
        b.Send(0, 1, MessageOp(kTensorK, -1, 0, MessageBytes(kTensorK, rows, 1, head_dim, type)),
               send_deps, recv_deps);
    const uint32_t send = static_cast<uint32_t>(b.Program(0).ops.size() - 1);
    b.Time(0, send);
    b.Time(1, recv);
    send_deps = {send};
    recv_deps = {recv};
  }
  CalibrationRun run = b.Finish(w);
  MESHPLAN_RETURN_IF_ERROR(CheckRun(run.workload, run.schedule));
  return run;
}

}  // namespace meshplan::exec
