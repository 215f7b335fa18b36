#include "executor/rank_runner.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <thread>
#include <unordered_map>

#include "executor/messages.h"
#include "executor/op_tensors.h"

namespace meshplan::exec {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

std::string OpName(int rank, uint32_t index, const Op& op) {
  return "rank " + std::to_string(rank) + " op " + std::to_string(index) + " (" +
         std::string(op.phase == Phase::kForward ? "fwd " : "bwd ") + std::string(OpKindName(op.kind)) + ")";
}

// Copies rows x heads [head_begin, head_begin + heads) of `from` into a new entry.
Entry SliceHeads(const Entry& from, int32_t head_begin, int32_t heads, const std::vector<int64_t>* rows = nullptr) {
  std::vector<int64_t> positions;
  std::vector<int64_t> row_index;
  if (rows == nullptr) {
    positions = from.positions;
    for (int64_t r = 0; r < from.rows(); ++r) row_index.push_back(r);
  } else {
    row_index = *rows;
    for (int64_t r : row_index) positions.push_back(from.positions[r]);
  }
  Entry out = Entry::Zeros(from.batch, positions, head_begin, heads, from.dim);
  for (int64_t b = 0; b < from.batch; ++b) {
    for (size_t i = 0; i < row_index.size(); ++i) {
      std::copy_n(from.At(b, row_index[i], head_begin), static_cast<size_t>(heads) * from.dim,
                  out.At(b, static_cast<int64_t>(i), head_begin));
    }
  }
  return out;
}

// Folds `in` (same rows, heads) into `acc`: log-sum-exp merge of (O, LSE) or a sum of gradients.
void MergeInto(Entry& acc_o, Entry* acc_lse, const Entry& in_o, const Entry* in_lse) {
  if (acc_lse == nullptr) {
    for (size_t i = 0; i < acc_o.data.size(); ++i) acc_o.data[i] += in_o.data[i];
    return;
  }
  std::vector<float> lse_acc(static_cast<size_t>(acc_o.rows())), lse_in(lse_acc.size());
  for (int64_t b = 0; b < acc_o.batch; ++b) {
    for (int32_t h = acc_o.head_begin; h < acc_o.head_begin + acc_o.heads; ++h) {
      for (int64_t r = 0; r < acc_o.rows(); ++r) {
        lse_acc[r] = *acc_lse->At(b, r, h);
        lse_in[r] = *in_lse->At(b, r, h);
      }
      MergePartial({acc_o.At(b, 0, h), acc_o.rows(), acc_o.row_stride()}, lse_acc.data(), in_o.At(b, 0, h),
                   in_o.row_stride(), lse_in.data(), acc_o.dim);
      for (int64_t r = 0; r < acc_o.rows(); ++r) *acc_lse->At(b, r, h) = lse_acc[r];
    }
  }
}

}  // namespace

RankRunner::RankRunner(const Schedule& schedule, int rank, const Workload& workload, Transport& transport,
                       ShardStore& store, const RunOptions& options, Clock::time_point start)
    : schedule_(schedule),
      program_(schedule.ranks[rank]),
      rank_(rank),
      workload_(workload),
      transport_(transport),
      store_(store),
      options_(options),
      start_(start),
      mask_(workload.mask),
      scale_(1.0f / std::sqrt(static_cast<float>(workload.head_dim))),
      done_(program_.ops.size(), 0),
      timings_(program_.ops.size()),
      collective_seq_(schedule.groups.size(), 0) {
  head_count_ = static_cast<int32_t>(workload.q_heads);
  for (const Op& op : program_.ops) {
    if (op.kind == OpKind::kCompute) {  // every compute op of a rank covers the same heads
      head_begin_ = op.head_begin;
      head_count_ = op.head_count;
      break;
    }
  }
}

Status RankRunner::Run() {
  std::vector<std::thread> threads;
  for (int stream = 0; stream < 4; ++stream) threads.emplace_back([this, stream] { StreamLoop(stream); });
  for (auto& t : threads) t.join();
  std::lock_guard<std::mutex> lock(mutex_);
  return first_error_;
}

void RankRunner::Fail(const Status& status) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (first_error_.ok()) first_error_ = status;
    failed_ = true;
  }
  done_cv_.notify_all();
  transport_.Abort(status.message());
}

void RankRunner::StreamLoop(int stream) {
  for (uint32_t i = 0; i < program_.ops.size(); ++i) {
    const Op& op = program_.ops[i];
    if (static_cast<int>(op.stream) != stream) continue;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      done_cv_.wait(lock, [&] {
        if (failed_) return true;
        for (uint32_t d = 0; d < op.dep_count; ++d) {
          if (!done_[program_.deps[op.dep_begin + d]]) return false;
        }
        return true;
      });
      if (failed_) return;
    }
    timings_[i].start_s = std::chrono::duration<double>(Clock::now() - start_).count();
    Status st = rank_ == options_.fail_rank && static_cast<int64_t>(i) == options_.fail_op
                    ? Status::Internal("injected failure")
                    : Execute(i);
    timings_[i].end_s = std::chrono::duration<double>(Clock::now() - start_).count();
    if (!st.ok()) {
      // Name the op; a transport error already starting with "rank R: " loses that prefix.
      const std::string own = "rank " + std::to_string(rank_) + ": ";
      std::string why = st.message();
      if (why.rfind(own, 0) == 0) why = why.substr(own.size());
      Fail((st.code() == ErrorCode::kInvalidInput ? Status::Invalid(why) : Status::Internal(why))
               .WithContext(OpName(rank_, i, op)));
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_[i] = 1;
    }
    done_cv_.notify_all();
  }
}

int32_t RankRunner::IdFor(const Op& op, uint16_t tensor) const {
  return ShardOf(op, tensor);
}

int32_t RankRunner::HeadsOf(uint16_t tensor) const {
  const bool kv = tensor == kTensorK || tensor == kTensorV || tensor == kTensorDK || tensor == kTensorDV;
  return static_cast<int32_t>(kv ? workload_.kv_heads : workload_.q_heads);
}

ShardStore::Ref RankRunner::Need(uint16_t tensor, int32_t id, EntryKind kind, const Op& op, Status* error) {
  ShardStore::Ref e = tensor == kTensorD ? EnsureDelta(id, kind) : store_.Find({tensor, id, kind});
  if (e == nullptr && error->ok()) {
    *error = Status::Internal("missing " + TensorNames(tensor) + " of " +
                              (kind == EntryKind::kSubShard ? "sub-shard " : "shard ") + std::to_string(id));
  }
  return e;
}

// D = rowsum(dO * O) of a shard, computed where both live, on first use.
ShardStore::Ref RankRunner::EnsureDelta(int32_t id, EntryKind kind) {
  std::lock_guard<std::mutex> lock(delta_mutex_);
  if (ShardStore::Ref d = store_.Find({kTensorD, id, kind})) return d;
  ShardStore::Ref o = store_.Find({kTensorO, id, kind});
  ShardStore::Ref d_o = store_.Find({kTensorDO, id, kind});
  if (o == nullptr || d_o == nullptr) return nullptr;
  Entry delta = Entry::Zeros(o->batch, o->positions, o->head_begin, o->heads, 1);
  for (int64_t b = 0; b < o->batch; ++b) {
    for (int64_t r = 0; r < o->rows(); ++r) {
      for (int32_t h = o->head_begin; h < o->head_begin + o->heads; ++h) {
        const float* x = o->At(b, r, h);
        const float* y = d_o->At(b, r, h);
        float sum = 0;
        for (int32_t e = 0; e < o->dim; ++e) sum += x[e] * y[e];
        *delta.At(b, r, h) = sum;
      }
    }
  }
  return store_.Put({kTensorD, id, kind}, std::move(delta));
}

std::optional<Entry> RankRunner::ZeroPartial(uint16_t tensor, int32_t id) {
  const bool kv = tensor == kTensorDK || tensor == kTensorDV;
  const int32_t g = static_cast<int32_t>(workload_.group_size());
  const float fill = tensor == kTensorLse ? -std::numeric_limits<float>::infinity() : 0.0f;
  return Entry::Zeros(workload_.batch, ShardPositions(schedule_.layout, id), kv ? head_begin_ / g : head_begin_,
                      kv ? head_count_ / g : head_count_, TensorDim(tensor, static_cast<int32_t>(workload_.head_dim)), fill);
}

std::optional<Entry> RankRunner::TakePartial(uint16_t tensor, int32_t id) {
  std::optional<Entry> e = store_.Take({tensor, id, EntryKind::kShard});
  return e ? e : ZeroPartial(tensor, id);
}

Status RankRunner::Post(int peer, int64_t tag, const std::vector<float>& payload) {
  if (rank_ == options_.silent_rank) return Status::Ok();  // injected fault: the message is lost
  return transport_.Send(peer, tag, payload);
}

Status RankRunner::Execute(uint32_t index) {
  const Op& op = program_.ops[index];
  switch (op.kind) {
    case OpKind::kCompute:
      return op.phase == Phase::kForward ? ComputeForward(op) : ComputeBackward(op);
    case OpKind::kMerge:
      return Merge(op);
    case OpKind::kSend:
      return Send(op);
    case OpKind::kRecv:
      return Recv(op);
    case OpKind::kAllGather:
      return AllGather(op);
    case OpKind::kReduceScatter:
      return ReduceScatter(op);
    case OpKind::kAllToAll:
      return AllToAll(op);
  }
  return Status::Internal("unknown op kind");
}

Status RankRunner::ComputeForward(const Op& op) {
  Status error;
  ShardStore::Ref q = Need(kTensorQ, op.q_shard, EntryKind::kShard, op, &error);
  ShardStore::Ref k = Need(kTensorK, op.kv_shard, EntryKind::kShard, op, &error);
  ShardStore::Ref v = Need(kTensorV, op.kv_shard, EntryKind::kShard, op, &error);
  if (!error.ok()) return error;
  const int32_t g = static_cast<int32_t>(workload_.group_size());
  if (!q->HasHeads(op.head_begin, op.head_count) || !k->HasHeads(op.head_begin / g, op.head_count / std::max(g, 1))) {
    return Status::Internal("inputs do not hold heads " + std::to_string(op.head_begin) + ".." +
                            std::to_string(op.head_begin + op.head_count - 1));
  }
  ShardStore::Ref o = store_.Find({kTensorO, op.q_shard, EntryKind::kShard});
  ShardStore::Ref lse = store_.Find({kTensorLse, op.q_shard, EntryKind::kShard});
  if (o == nullptr || lse == nullptr) {
    o = store_.Put({kTensorO, op.q_shard, EntryKind::kShard},
                    Entry::Zeros(q->batch, q->positions, op.head_begin, op.head_count, q->dim));
    lse = store_.Put({kTensorLse, op.q_shard, EntryKind::kShard},
                      Entry::Zeros(q->batch, q->positions, op.head_begin, op.head_count, 1, kNegInf));
  }
  const int64_t n = q->rows(), d = q->dim;
  std::vector<float> part(static_cast<size_t>(n * d)), part_lse(static_cast<size_t>(n)), acc_lse(part_lse.size());
  for (int64_t b = 0; b < q->batch; ++b) {
    for (int32_t h = op.head_begin; h < op.head_begin + op.head_count; ++h) {
      const int32_t kh = h / g;
      BlockForward({q->At(b, 0, h), n, q->row_stride(), q->positions.data()},
                   {k->At(b, 0, kh), k->rows(), k->row_stride(), k->positions.data()},
                   {v->At(b, 0, kh), v->rows(), v->row_stride(), v->positions.data()}, d, scale_, mask_,
                   {part.data(), n, d}, part_lse.data());
      for (int64_t r = 0; r < n; ++r) acc_lse[r] = *lse->At(b, r, h);
      MergePartial({o->At(b, 0, h), n, o->row_stride()}, acc_lse.data(), part.data(), d, part_lse.data(), d);
      for (int64_t r = 0; r < n; ++r) *lse->At(b, r, h) = acc_lse[r];
    }
  }
  return Status::Ok();
}

Status RankRunner::ComputeBackward(const Op& op) {
  Status error;
  ShardStore::Ref q = Need(kTensorQ, op.q_shard, EntryKind::kShard, op, &error);
  ShardStore::Ref k = Need(kTensorK, op.kv_shard, EntryKind::kShard, op, &error);
  ShardStore::Ref v = Need(kTensorV, op.kv_shard, EntryKind::kShard, op, &error);
  ShardStore::Ref d_o = Need(kTensorDO, op.q_shard, EntryKind::kShard, op, &error);
  ShardStore::Ref lse = Need(kTensorLse, op.q_shard, EntryKind::kShard, op, &error);
  ShardStore::Ref delta = Need(kTensorD, op.q_shard, EntryKind::kShard, op, &error);
  if (!error.ok()) return error;
  const int32_t g = static_cast<int32_t>(workload_.group_size());
  const int32_t kv_begin = op.head_begin / g, kv_count = op.head_count / g;
  ShardStore::Ref dq = store_.Find({kTensorDQ, op.q_shard, EntryKind::kShard});
  if (dq == nullptr) {
    dq = store_.Put({kTensorDQ, op.q_shard, EntryKind::kShard},
                     Entry::Zeros(q->batch, q->positions, op.head_begin, op.head_count, q->dim));
  }
  ShardStore::Ref dk = store_.Find({kTensorDK, op.kv_shard, EntryKind::kShard});
  ShardStore::Ref dv = store_.Find({kTensorDV, op.kv_shard, EntryKind::kShard});
  if (dk == nullptr || dv == nullptr) {
    dk = store_.Put({kTensorDK, op.kv_shard, EntryKind::kShard},
                     Entry::Zeros(k->batch, k->positions, kv_begin, kv_count, k->dim));
    dv = store_.Put({kTensorDV, op.kv_shard, EntryKind::kShard},
                     Entry::Zeros(k->batch, k->positions, kv_begin, kv_count, k->dim));
  }
  const int64_t n = q->rows(), d = q->dim;
  std::vector<float> lse_rows(static_cast<size_t>(n)), delta_rows(lse_rows.size());
  for (int64_t b = 0; b < q->batch; ++b) {
    for (int32_t h = op.head_begin; h < op.head_begin + op.head_count; ++h) {
      const int32_t kh = h / g;
      for (int64_t r = 0; r < n; ++r) {
        lse_rows[r] = *lse->At(b, r, h);
        delta_rows[r] = *delta->At(b, r, h);
      }
      BlockBackward({q->At(b, 0, h), n, q->row_stride(), q->positions.data()},
                    {k->At(b, 0, kh), k->rows(), k->row_stride(), k->positions.data()},
                    {v->At(b, 0, kh), v->rows(), v->row_stride(), v->positions.data()},
                    {d_o->At(b, 0, h), n, d_o->row_stride(), d_o->positions.data()}, lse_rows.data(),
                    delta_rows.data(), d, scale_, mask_, {dq->At(b, 0, h), n, dq->row_stride()},
                    {dk->At(b, 0, kh), dk->rows(), dk->row_stride()}, {dv->At(b, 0, kh), dv->rows(), dv->row_stride()});
    }
  }
  return Status::Ok();
}

Status RankRunner::Merge(const Op& op) {
  for (uint16_t bit : TensorBitsOf(op.tensors)) {
    if (bit == kTensorLse) continue;  // merged with O
    const int32_t id = IdFor(op, bit);
    auto pop = [this](uint16_t tensor, int32_t shard) -> std::optional<Entry> {
      std::lock_guard<std::mutex> lock(incoming_mutex_);
      auto it = incoming_.find({tensor, shard});
      if (it == incoming_.end() || it->second.empty()) return std::nullopt;
      Entry e = std::move(it->second.front());
      it->second.pop_front();
      return e;
    };
    std::optional<Entry> in = pop(bit, id);
    if (!in) return Status::Internal("no received " + TensorNames(bit) + " of shard " + std::to_string(id) + " to merge");
    std::optional<Entry> in_lse;
    if (bit == kTensorO) {
      in_lse = pop(kTensorLse, id);
      if (!in_lse) return Status::Internal("received O without its LSE");
    }
    ShardStore::Ref acc = store_.Find({bit, id, EntryKind::kShard});
    if (acc == nullptr) {  // owner-first chains: the total comes back to an empty accumulator
      store_.Put({bit, id, EntryKind::kShard}, std::move(*in));
      if (in_lse) store_.Put({kTensorLse, id, EntryKind::kShard}, std::move(*in_lse));
      continue;
    }
    ShardStore::Ref acc_lse = bit == kTensorO ? store_.Find({kTensorLse, id, EntryKind::kShard}) : nullptr;
    if (acc->data.size() != in->data.size()) return Status::Internal("merged partial has another shape");
    MergeInto(*acc, acc_lse.get(), *in, in_lse ? &*in_lse : nullptr);
  }
  return Status::Ok();
}

Status RankRunner::Send(const Op& op) {
  std::vector<Piece> pieces;
  for (uint16_t bit : TensorBitsOf(op.tensors)) {
    const int32_t id = IdFor(op, bit);
    Piece piece;
    piece.tensor = bit;
    piece.id = id;
    if (HandsOver(bit, op.tensors)) {
      std::optional<Entry> e = TakePartial(bit, id);
      if (!e) return Status::Internal("nothing to send: " + TensorNames(bit) + " of shard " + std::to_string(id));
      piece.entry = std::move(*e);
    } else {
      Status error;
      ShardStore::Ref e = Need(bit, id, EntryKind::kShard, op, &error);
      if (!error.ok()) return error;
      piece.entry = *e;
    }
    pieces.push_back(std::move(piece));
  }
  std::vector<const Piece*> refs;
  for (const Piece& p : pieces) refs.push_back(&p);
  return Post(op.peer, op.tag, Pack(refs));
}

Status RankRunner::Recv(const Op& op) {
  std::vector<float> payload;
  MESHPLAN_RETURN_IF_ERROR(transport_.Recv(op.peer, op.tag, &payload, Clock::now() + options_.recv_timeout));
  auto pieces = Unpack(payload);
  if (!pieces.ok()) return pieces.status();
  for (Piece& p : *pieces) {
    if ((op.tensors & p.tensor) == 0) return Status::Internal("received unexpected " + TensorNames(p.tensor));
    if (HandsOver(p.tensor, op.tensors)) {
      std::lock_guard<std::mutex> lock(incoming_mutex_);
      incoming_[{p.tensor, p.id}].push_back(std::move(p.entry));
    } else {
      store_.Put({p.tensor, p.id, EntryKind::kShard}, std::move(p.entry));
    }
  }
  return Status::Ok();
}

int64_t RankRunner::CollectiveTag(const Op& op, int bit, int from) {
  // Above every p2p tag (those fit in 31 bits): group, the group's collective count, tensor, sender.
  return (int64_t{1} << 40) | (static_cast<int64_t>(op.group) << 28) |
         (collective_seq_[op.group] << 12) | (static_cast<int64_t>(bit) << 8) | from;
}

Status RankRunner::AllGather(const Op& op) {
  const auto& members = schedule_.groups[op.group];
  const int me = static_cast<int>(std::find(members.begin(), members.end(), rank_) - members.begin());
  for (uint16_t bit : TensorBitsOf(op.tensors)) {
    const int32_t id = IdFor(op, bit);
    Status error;
    ShardStore::Ref own = Need(bit, id, EntryKind::kShard, op, &error);
    if (!error.ok()) return error;
    Piece piece{bit, id, *own};
    const std::vector<float> payload = Pack({&piece});
    const int b = __builtin_ctz(bit);
    for (int m = 0; m < static_cast<int>(members.size()); ++m) {
      if (m != me) MESHPLAN_RETURN_IF_ERROR(Post(members[m], CollectiveTag(op, b, me), payload));
    }
    for (int m = 0; m < static_cast<int>(members.size()); ++m) {
      if (m == me) continue;
      std::vector<float> in;
      MESHPLAN_RETURN_IF_ERROR(transport_.Recv(members[m], CollectiveTag(op, b, m), &in, Clock::now() + options_.recv_timeout));
      auto pieces = Unpack(in);
      if (!pieces.ok()) return pieces.status();
      for (Piece& p : *pieces) store_.Put({p.tensor, p.id, EntryKind::kShard}, std::move(p.entry));
    }
  }
  ++collective_seq_[op.group];
  return Status::Ok();
}

Status RankRunner::ReduceScatter(const Op& op) {
  const auto& members = schedule_.groups[op.group];
  const int me = static_cast<int>(std::find(members.begin(), members.end(), rank_) - members.begin());
  const int p = static_cast<int>(members.size());
  const uint16_t first = static_cast<uint16_t>(op.tensors & (~op.tensors + 1));
  const int32_t own = IdFor(op, first);
  // Round 1: learn which shard each member keeps.
  std::vector<int32_t> shard_of(p, -1);
  shard_of[me] = own;
  {
    Piece id_piece{0, own, Entry{}};
    const std::vector<float> payload = Pack({&id_piece});
    for (int m = 0; m < p; ++m) {
      if (m != me) MESHPLAN_RETURN_IF_ERROR(Post(members[m], CollectiveTag(op, 15, me), payload));
    }
    for (int m = 0; m < p; ++m) {
      if (m == me) continue;
      std::vector<float> in;
      MESHPLAN_RETURN_IF_ERROR(transport_.Recv(members[m], CollectiveTag(op, 15, m), &in, Clock::now() + options_.recv_timeout));
      auto pieces = Unpack(in);
      if (!pieces.ok() || pieces->size() != 1) return Status::Internal("malformed reduce-scatter handshake");
      shard_of[m] = (*pieces)[0].id;
    }
  }
  // Round 2: hand each member the partials of its shard, then merge what arrives for ours.
  const std::vector<uint16_t> bits = TensorBitsOf(op.tensors);
  for (int m = 0; m < p; ++m) {
    if (m == me) continue;
    std::vector<Piece> pieces;
    for (uint16_t bit : bits) {
      std::optional<Entry> e = TakePartial(bit, shard_of[m]);
      if (!e) return Status::Internal("no partial " + TensorNames(bit) + " of shard " + std::to_string(shard_of[m]));
      pieces.push_back({bit, shard_of[m], std::move(*e)});
    }
    std::vector<const Piece*> refs;
    for (const Piece& piece : pieces) refs.push_back(&piece);
    MESHPLAN_RETURN_IF_ERROR(Post(members[m], CollectiveTag(op, 14, me), Pack(refs)));
  }
  for (int m = 0; m < p; ++m) {
    if (m == me) continue;
    std::vector<float> in;
    MESHPLAN_RETURN_IF_ERROR(transport_.Recv(members[m], CollectiveTag(op, 14, m), &in, Clock::now() + options_.recv_timeout));
    auto pieces = Unpack(in);
    if (!pieces.ok()) return pieces.status();
    const Entry* in_lse = nullptr;
    for (const Piece& piece : *pieces) {
      if (piece.tensor == kTensorLse) in_lse = &piece.entry;
    }
    for (const Piece& piece : *pieces) {
      if (piece.tensor == kTensorLse) continue;
      ShardStore::Ref acc = store_.Find({piece.tensor, own, EntryKind::kShard});
      if (acc == nullptr) {
        std::optional<Entry> zero = ZeroPartial(piece.tensor, own);
        if (!zero) return Status::Internal("no own partial " + TensorNames(piece.tensor) + " to reduce into");
        acc = store_.Put({piece.tensor, own, EntryKind::kShard}, std::move(*zero));
        if (piece.tensor == kTensorO) {
          if (auto zero_lse = ZeroPartial(kTensorLse, own)) store_.Put({kTensorLse, own, EntryKind::kShard}, std::move(*zero_lse));
        }
      }
      ShardStore::Ref acc_lse = piece.tensor == kTensorO ? store_.Find({kTensorLse, own, EntryKind::kShard}) : nullptr;
      MergeInto(*acc, acc_lse.get(), piece.entry, piece.tensor == kTensorO ? in_lse : nullptr);
    }
  }
  ++collective_seq_[op.group];
  return Status::Ok();
}

// Ulysses all-to-all inside a group of U ranks sharing one compute shard rho (rank = u + U*rho
// holds input sub-shard `rank`). Sequence -> heads: every member ends with the whole shard for
// its slice of heads. Heads -> sequence: every member ends with its sub-shard for all heads.
Status RankRunner::AllToAll(const Op& op) {
  const auto& members = schedule_.groups[op.group];
  const int u = static_cast<int>(members.size());
  const int me = static_cast<int>(std::find(members.begin(), members.end(), rank_) - members.begin());
  const int32_t shard = static_cast<int32_t>(rank_ / schedule_.layout.subdivide);
  for (uint16_t bit : TensorBitsOf(op.tensors)) {
    const int b = __builtin_ctz(bit);
    const int32_t heads = HeadsOf(bit), slice = heads / u;
    std::vector<Entry> received(u);
    if (op.a2a == A2ADirection::kSeqToHeads) {
      Status error;
      ShardStore::Ref mine = Need(bit, rank_, EntryKind::kSubShard, op, &error);
      if (!error.ok()) return error;
      for (int m = 0; m < u; ++m) {
        Piece piece{bit, rank_, SliceHeads(*mine, m * slice, slice)};
        if (m == me) {
          received[m] = std::move(piece.entry);
        } else {
          MESHPLAN_RETURN_IF_ERROR(Post(members[m], CollectiveTag(op, b, me), Pack({&piece})));
        }
      }
    } else {
      ShardStore::Ref mine = store_.Find({bit, shard, EntryKind::kShard});
      if (mine == nullptr) return Status::Internal("missing " + TensorNames(bit) + " of shard " + std::to_string(shard));
      std::unordered_map<int64_t, int64_t> row_of;
      for (int64_t r = 0; r < mine->rows(); ++r) row_of[mine->positions[r]] = r;
      for (int m = 0; m < u; ++m) {
        std::vector<int64_t> rows;
        for (int64_t pos : SubShardPositions(schedule_.layout, members[m])) rows.push_back(row_of.at(pos));
        Piece piece{bit, members[m], SliceHeads(*mine, mine->head_begin, mine->heads, &rows)};
        if (m == me) {
          received[m] = std::move(piece.entry);
        } else {
          MESHPLAN_RETURN_IF_ERROR(Post(members[m], CollectiveTag(op, b, me), Pack({&piece})));
        }
      }
      // Final gradients are not needed in the head layout afterwards; the output O is kept
      // (a cached backward computes D from it).
      if (bit != kTensorO && bit != kTensorLse) store_.Take({bit, shard, EntryKind::kShard});
    }
    for (int m = 0; m < u; ++m) {
      if (m == me) continue;
      std::vector<float> in;
      MESHPLAN_RETURN_IF_ERROR(transport_.Recv(members[m], CollectiveTag(op, b, m), &in, Clock::now() + options_.recv_timeout));
      auto pieces = Unpack(in);
      if (!pieces.ok() || pieces->size() != 1) return Status::Internal("malformed all-to-all message");
      received[m] = std::move((*pieces)[0].entry);
    }
    const int32_t dim = TensorDim(bit, static_cast<int32_t>(workload_.head_dim));
    if (op.a2a == A2ADirection::kSeqToHeads) {
      // Rows of every member's sub-shard, my heads.
      std::vector<int64_t> positions;
      for (const Entry& e : received) positions.insert(positions.end(), e.positions.begin(), e.positions.end());
      Entry whole = Entry::Zeros(workload_.batch, positions, me * slice, slice, dim);
      int64_t offset = 0;
      for (const Entry& e : received) {
        for (int64_t bb = 0; bb < e.batch; ++bb) {
          for (int64_t r = 0; r < e.rows(); ++r) {
            std::copy_n(e.At(bb, r, me * slice), static_cast<size_t>(slice) * dim, whole.At(bb, offset + r, me * slice));
          }
        }
        offset += e.rows();
      }
      store_.Put({bit, shard, EntryKind::kShard}, std::move(whole));
    } else {
      // My sub-shard's rows, every member's heads.
      Entry mine = Entry::Zeros(workload_.batch, received[me].positions, 0, heads, dim);
      for (int m = 0; m < u; ++m) {
        const Entry& e = received[m];
        for (int64_t bb = 0; bb < e.batch; ++bb) {
          for (int64_t r = 0; r < e.rows(); ++r) {
            std::copy_n(e.At(bb, r, e.head_begin), static_cast<size_t>(e.heads) * dim, mine.At(bb, r, e.head_begin));
          }
        }
      }
      store_.Put({bit, rank_, EntryKind::kSubShard}, std::move(mine));
    }
  }
  ++collective_seq_[op.group];
  return Status::Ok();
}

}  // namespace meshplan::exec
