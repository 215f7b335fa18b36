#include "executor/device/device_engine.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <tuple>
#include <unordered_map>

#include "executor/device/engine_outputs.h"
#include "executor/device/half_float.h"
#include "executor/device/op_tensors.h"

namespace meshplan::exec {

struct DeviceEngine::Block {
  int32_t rank = 0;
  void* ptr = nullptr;
  StreamUses uses{-1, -1, -1, -1};
  int64_t writer = -1;  // the last op of the rank that wrote the buffer (-1: loaded before the run)
};

// An entry as in the CPU executor (shard_store.h), with its data in a device buffer of the rank
// that holds it (null on ranks this process does not run).
struct DeviceEngine::Entry {
  int64_t batch = 0;
  std::vector<int64_t> positions;
  int32_t head_begin = 0, heads = 0, dim = 0;
  int32_t elem_bytes = 4;
  std::shared_ptr<Block> block;
  const int64_t* device_positions =
      nullptr;  // positions on the device, once used as a kernel input
  // Every element holds the same value (a zero partial: O = 0 with LSE = -inf, or zero gradients),
  // so its row order carries no information and may be relabelled.
  bool uniform = false;
  int64_t producer = -1;  // the op of the holding rank that received it (-1: made there)

  int64_t rows() const { return static_cast<int64_t>(positions.size()); }
  int64_t elements() const { return batch * rows() * heads * dim; }
  int64_t bytes() const { return elements() * elem_bytes; }
  void* data() const { return block ? block->ptr : nullptr; }
  float* f32() const { return static_cast<float*>(data()); }
  bool HasHeads(int32_t begin, int32_t count) const {
    return begin >= head_begin && begin + count <= head_begin + heads;
  }
};

struct DeviceEngine::RankState {
  std::map<EntryKey, EntryRef> store;
  std::map<std::pair<uint16_t, int32_t>, std::deque<EntryRef>> incoming;
  // D computed here, per (shard, kind, stream): a D computed by an op of one stream is ordered
  // before later ops of that stream only, so each stream that needs it computes its own.
  std::map<std::tuple<int32_t, EntryKind, StreamId>, EntryRef> local_deltas;
  std::vector<const int64_t*> shard_positions;  // device positions of each compute-layout shard
  std::vector<void*> static_buffers;  // uploaded before or during the run, freed at the end
  std::map<std::vector<int64_t>, const int64_t*>
      positions_cache;  // row orders uploaded during the run
  const int64_t* doc_starts = nullptr;
  int32_t head_begin = 0, head_count = 0;  // query heads this rank computes
  int64_t live_bytes = 0, peak_bytes = 0;
};

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

bool IsInput(uint16_t tensor) {
  return tensor == kTensorQ || tensor == kTensorK || tensor == kTensorV || tensor == kTensorDO;
}

// Places a received copy of a shard's data. Inputs (Q, K, V, dO) and D never change, so a copy the
// rank already holds stays: ops issued later but earlier in program order may still read it, and
// they are not ordered after the new copy's receive.
template <typename Store, typename Ref>
void KeepCopy(Store& store, const EntryKey& key, const Ref& received) {
  const bool immutable = IsInput(key.tensor) || key.tensor == kTensorD;
  auto [it, inserted] = store.try_emplace(key, received);
  if (!inserted && !immutable) it->second = received;
}

std::string OpName(int32_t rank, uint32_t index, const Op& op) {
  return "rank " + std::to_string(rank) + " op " + std::to_string(index) + " (" +
         std::string(op.phase == Phase::kForward ? "fwd " : "bwd ") +
         std::string(OpKindName(op.kind)) + ")";
}

}  // namespace

DeviceEngine::DeviceEngine(const Schedule& schedule, const Workload& workload,
                           const RunOptions& options, DeviceOps& ops, std::vector<uint8_t> local)
    : schedule_(schedule),
      workload_(workload),
      options_(options),
      ops_(ops),
      local_(std::move(local)),
      dead_(std::make_shared<std::vector<std::unique_ptr<Block>>>()) {
  for (int64_t r = 0; r < schedule.num_ranks; ++r) {
    auto state = std::make_unique<RankState>();
    state->head_count = static_cast<int32_t>(workload.q_heads);
    for (const Op& op : schedule.ranks[r].ops) {
      if (op.kind == OpKind::kCompute) {  // every compute op of a rank covers the same heads
        state->head_begin = op.head_begin;
        state->head_count = op.head_count;
        break;
      }
    }
    ranks_.push_back(std::move(state));
  }
}

DeviceEngine::~DeviceEngine() {
  // Drop every entry, then free the buffers (the device finished in Run, or never started).
  for (auto& state : ranks_) {
    state->store.clear();
    state->incoming.clear();
    state->local_deltas.clear();
  }
  (void)ReleaseDead();
  for (size_t r = 0; r < ranks_.size(); ++r) {
    for (void* ptr : ranks_[r]->static_buffers)
      (void)ops_.Free(static_cast<int32_t>(r), ptr, StreamUses{-1, -1, -1, -1});
  }
}

int32_t DeviceEngine::IdFor(const Op& op, uint16_t tensor) const { return ShardOf(op, tensor); }

int32_t DeviceEngine::HeadsOf(uint16_t tensor) const {
  const bool kv =
      tensor == kTensorK || tensor == kTensorV || tensor == kTensorDK || tensor == kTensorDV;
  return static_cast<int32_t>(kv ? workload_.kv_heads : workload_.q_heads);
}

int32_t DeviceEngine::ElemBytes(uint16_t tensor) const {
  return IsInput(tensor) ? InputBytes(options_.type) : 4;
}

BlockProblem DeviceEngine::Problem(const Op& op) const {
  BlockProblem p;
  p.type = options_.type;
  p.batch = workload_.batch;
  p.dim = static_cast<int32_t>(workload_.head_dim);
  p.scale = 1.0f / std::sqrt(static_cast<float>(workload_.head_dim));
  p.head_begin = op.head_begin;
  p.head_count = op.head_count;
  p.group_size = static_cast<int32_t>(workload_.group_size());
  p.mask.params = workload_.mask.Params();
  p.mask.num_docs = static_cast<int32_t>(workload_.mask.document_lengths.size());
  // Host starts for host-side splits (cuDNN); the device copy is set per rank by the caller.
  if (!doc_starts_.empty()) p.mask.host_doc_starts = doc_starts_.data();
  return p;
}

Result<DeviceEngine::EntryRef> DeviceEngine::NewEntry(int32_t rank, uint32_t op, StreamId stream,
                                                      int64_t batch, std::vector<int64_t> positions,
                                                      int32_t head_begin, int32_t heads,
                                                      int32_t dim, int32_t elem_bytes,
                                                      void* adopt) {
  auto e = std::make_shared<Entry>();
  e->batch = batch;
  e->positions = std::move(positions);
  e->head_begin = head_begin;
  e->heads = heads;
  e->dim = dim;
  e->elem_bytes = elem_bytes;
  if (!Local(rank)) return e;
  void* ptr = adopt;
  if (ptr == nullptr) {
    MESHPLAN_ASSIGN_OR_RETURN(auto allocated, ops_.Allocate(rank, e->bytes(), stream));
    ptr = allocated;
  }
  RankState& state = *ranks_[rank];
  const int64_t bytes = e->bytes();
  state.live_bytes += bytes;
  state.peak_bytes = std::max(state.peak_bytes, state.live_bytes);
  auto block = std::make_unique<Block>();
  block->rank = rank;
  block->ptr = ptr;
  // The last entry holding a buffer queues it for release after the current step (its ops'
  // end events exist by then; see ReleaseDead).
  std::weak_ptr<std::vector<std::unique_ptr<Block>>> dead = dead_;
  RankState* owner = &state;
  e->block = std::shared_ptr<Block>(block.release(), [dead, owner, bytes](Block* b) {
    owner->live_bytes -= bytes;
    if (auto list = dead.lock()) {
      list->emplace_back(b);
    } else {
      delete b;
    }
  });
  if (adopt == nullptr) {
    Use(e, op, stream);
    e->block->writer = op;
  }
  return e;
}

void DeviceEngine::Use(const EntryRef& e, uint32_t op, StreamId stream) {
  if (!e || !e->block) return;
  int64_t& last = e->block->uses[static_cast<int>(stream)];
  last = std::max(last, static_cast<int64_t>(op));
}

void DeviceEngine::Touch(const EntryRef& e, int32_t rank, uint32_t op, StreamId stream,
                         Access access, uint16_t tensor, int32_t id) {
  if (!e || !e->block) return;
  Use(e, op, stream);
  if (!options_.check_dependencies) return;
  Block& b = *e->block;
  if (b.writer >= 0 && order_error_.ok() && !OrderedBefore(rank, b.writer, op)) {
    const Op& reader = schedule_.ranks[rank].ops[op];
    const Op& writer = schedule_.ranks[rank].ops[static_cast<size_t>(b.writer)];
    order_error_ = Status::Internal(
        "dependency check: " + OpName(rank, op, reader) + " reads " + TensorNames(tensor) +
        " of shard " + std::to_string(id) + ", written by op " + std::to_string(b.writer) + " (" +
        std::string(OpKindName(writer.kind)) + " on the " + std::string(StreamName(writer.stream)) +
        " stream), but no chain of deps and stream order puts that write before this op");
  }
  if (access == Access::kReadWrite) b.writer = op;
}

bool DeviceEngine::OrderedBefore(int32_t rank, int64_t before, uint32_t after) const {
  if (before == after) return true;
  const StreamId stream = schedule_.ranks[rank].ops[static_cast<size_t>(before)].stream;
  return order_clocks_[rank][after][static_cast<int>(stream)] >= before;
}

// clock[i][s]: the last op on stream s that ends before op i starts. Ops of a stream run in
// program order, and deps point to earlier ops, so one pass in program order suffices.
void DeviceEngine::BuildOrderClocks() {
  order_clocks_.assign(ranks_.size(), {});
  for (size_t r = 0; r < ranks_.size(); ++r) {
    if (!Local(static_cast<int32_t>(r))) continue;
    const RankProgram& program = schedule_.ranks[r];
    auto& clocks = order_clocks_[r];
    clocks.resize(program.ops.size());
    std::array<int64_t, 4> last{-1, -1, -1, -1};
    auto join = [&clocks, &program](std::array<int64_t, 4>& into, int64_t op) {
      for (int s = 0; s < 4; ++s) into[s] = std::max(into[s], clocks[op][s]);
      const int s = static_cast<int>(program.ops[op].stream);
      into[s] = std::max(into[s], op);
    };
    for (size_t i = 0; i < program.ops.size(); ++i) {
      const Op& op = program.ops[i];
      std::array<int64_t, 4> clock{-1, -1, -1, -1};
      const int s = static_cast<int>(op.stream);
      if (last[s] >= 0) join(clock, last[s]);
      for (uint32_t k = op.dep_begin; k < op.dep_begin + op.dep_count; ++k)
        join(clock, program.deps[k]);
      clocks[i] = clock;
      last[s] = static_cast<int64_t>(i);
    }
  }
}

Status DeviceEngine::ReleaseDead() {
  std::vector<std::unique_ptr<Block>> dead;
  dead.swap(*dead_);
  Status first;
  for (auto& b : dead) {
    Status st = ops_.Free(b->rank, b->ptr, b->uses);
    if (!st.ok() && first.ok()) first = st;
  }
  return first;
}

Status DeviceEngine::LoadInputs(const InputSource& inputs) {
  MESHPLAN_RETURN_IF_ERROR(ops_.Prepare(schedule_, local_));
  const EntryKind kind = schedule_.layout.subdivide > 1 ? EntryKind::kSubShard : EntryKind::kShard;
  doc_starts_.clear();
  if (workload_.mask.IsDocuments()) {
    doc_starts_.push_back(0);
    for (int64_t len : workload_.mask.document_lengths)
      doc_starts_.push_back(doc_starts_.back() + len);
    doc_starts_.pop_back();
  }
  for (int32_t r = 0; r < schedule_.num_ranks; ++r) {
    RankState& state = *ranks_[r];
    const std::vector<int64_t> positions = SubShardPositions(schedule_.layout, r);
    // Only a local rank's own rows are generated or read (per-rank inputs).
    auto load = [&](uint16_t bit, InputTensor which) -> Status {
      const int32_t heads = HeadsOf(bit), dim = static_cast<int32_t>(workload_.head_dim);
      void* uploaded = nullptr;
      if (Local(r)) {
        const int64_t row_elems = static_cast<int64_t>(heads) * dim,
                      elem = InputBytes(options_.type);
        std::vector<char> host(static_cast<size_t>(workload_.batch) * positions.size() *
                               static_cast<size_t>(row_elems * elem));
        std::vector<float> row(static_cast<size_t>(row_elems));
        char* out = host.data();
        for (int64_t b = 0; b < workload_.batch; ++b) {
          for (int64_t pos : positions) {
            inputs.Row(which, b, pos, row.data());
            EncodeInputs(options_.type, row.data(), row_elems, out);
            out += row_elems * elem;
          }
        }
        MESHPLAN_ASSIGN_OR_RETURN(auto ptr,
                                  ops_.Upload(r, host.data(), static_cast<int64_t>(host.size())));
        uploaded = ptr;
      }
      MESHPLAN_ASSIGN_OR_RETURN(
          auto e, NewEntry(r, 0, StreamId::kCompute, workload_.batch, positions, 0, heads, dim,
                           ElemBytes(bit), uploaded));
      state.store[{bit, r, kind}] = e;
      return Status::Ok();
    };
    MESHPLAN_RETURN_IF_ERROR(load(kTensorQ, InputTensor::kQ));
    MESHPLAN_RETURN_IF_ERROR(load(kTensorK, InputTensor::kK));
    MESHPLAN_RETURN_IF_ERROR(load(kTensorV, InputTensor::kV));
    if (HasBackward(workload_.pass)) MESHPLAN_RETURN_IF_ERROR(load(kTensorDO, InputTensor::kDO));
    if (!Local(r)) continue;
    for (int64_t s = 0; s < schedule_.layout.num_shards; ++s) {
      const std::vector<int64_t> p = ShardPositions(schedule_.layout, s);
      MESHPLAN_ASSIGN_OR_RETURN(
          auto ptr, ops_.Upload(r, p.data(), static_cast<int64_t>(p.size() * sizeof(int64_t))));
      state.static_buffers.push_back(ptr);
      state.shard_positions.push_back(static_cast<const int64_t*>(ptr));
    }
    if (workload_.mask.IsDocuments()) {
      MESHPLAN_ASSIGN_OR_RETURN(
          auto ptr, ops_.Upload(r, doc_starts_.data(),
                                static_cast<int64_t>(doc_starts_.size() * sizeof(int64_t))));
      state.static_buffers.push_back(ptr);
      state.doc_starts = static_cast<const int64_t*>(ptr);
    }
  }
  return Status::Ok();
}

// Input tensors (Q, K, V, dO) of compute-layout shards an op reads or sends.
void DeviceEngine::ForEachInputKey(const Op& op,
                                   const std::function<void(uint16_t, int32_t)>& fn) const {
  if (op.kind == OpKind::kCompute) {
    fn(kTensorQ, op.q_shard);
    fn(kTensorK, op.kv_shard);
    fn(kTensorV, op.kv_shard);
    if (op.phase == Phase::kBackward) fn(kTensorDO, op.q_shard);
    return;
  }
  if (op.kind == OpKind::kSend || op.kind == OpKind::kAllGather) {
    for (uint16_t bit : TensorBitsOf(op.tensors)) {
      if (IsInput(bit)) fn(bit, IdFor(op, bit));
    }
  }
}

Result<DeviceRunResult> DeviceEngine::Run() {
  MESHPLAN_ASSIGN_OR_RETURN(auto order, BuildLaunchOrder(schedule_));
  // Liveness of input shards: after the step of its last reader, a rank drops its copy of an input
  // shard (a ring passes every K,V shard through every rank; keeping them all would hold the
  // whole sequence). Accumulators and outputs are never dropped here.
  std::vector<std::vector<std::pair<int32_t, EntryKey>>> drop(order.steps.size());
  {
    std::vector<std::map<EntryKey, size_t>> last(ranks_.size());
    for (size_t k = 0; k < order.steps.size(); ++k) {
      ForEachStepOp(order.steps[k], [&](int32_t rank, uint32_t index) {
        ForEachInputKey(schedule_.ranks[rank].ops[index], [&](uint16_t tensor, int32_t id) {
          last[rank][{tensor, id, EntryKind::kShard}] = k;
        });
      });
    }
    for (size_t r = 0; r < last.size(); ++r) {
      for (const auto& [key, k] : last[r]) drop[k].push_back({static_cast<int32_t>(r), key});
    }
  }
  if (options_.check_dependencies) BuildOrderClocks();
  MESHPLAN_RETURN_IF_ERROR(ops_.Start());
  for (size_t k = 0; k < order.steps.size(); ++k) {
    Status st = Issue(order.steps[k]);
    if (st.ok()) st = order_error_;
    for (const auto& [rank, key] : drop[k]) ranks_[rank]->store.erase(key);
    if (st.ok()) st = ReleaseDead();
    if (!st.ok()) {
      ops_.Abort(st);  // stops the device (and peers) before anything is freed
      return st;
    }
  }
  DeviceRunResult result;
  MESHPLAN_RETURN_IF_ERROR(ops_.Finish(options_.progress_timeout_s, &result.times));
  for (const auto& state : ranks_) result.peak_bytes.push_back(state->peak_bytes);
  return result;
}

void DeviceEngine::ForEachStepOp(const LaunchStep& step,
                                 const std::function<void(int32_t, uint32_t)>& fn) const {
  if (step.local()) {
    fn(step.rank, step.op);
    return;
  }
  for (const PairLaunch& p : step.pairs) {
    fn(p.src, p.send_op);
    fn(p.dst, p.recv_op);
  }
  for (const CollectiveLaunch& c : step.collectives) {
    const auto& members = schedule_.groups[c.group];
    for (size_t m = 0; m < members.size(); ++m) fn(members[m], c.ops[m]);
  }
}

Status DeviceEngine::Issue(const LaunchStep& step) {
  if (step.local()) return IssueLocal(step.rank, step.op);
  return IssueExchange(step);
}

// Only the process that runs the failing rank fails (as a real failure would); the others learn
// of it through the transport's abort.
Status DeviceEngine::Injected(int32_t rank, uint32_t index) const {
  if (!Local(rank) || rank != options_.fail_rank ||
      static_cast<int64_t>(index) != options_.fail_op) {
    return Status::Ok();
  }
  return Status::Internal("injected failure")
      .WithContext(OpName(rank, index, schedule_.ranks[rank].ops[index]));
}

Status DeviceEngine::IssueLocal(int32_t rank, uint32_t index) {
  const RankProgram& program = schedule_.ranks[rank];
  const Op& op = program.ops[index];
  MESHPLAN_RETURN_IF_ERROR(Injected(rank, index));
  if (Local(rank)) {
    std::vector<uint32_t> deps(program.deps.begin() + op.dep_begin,
                               program.deps.begin() + op.dep_begin + op.dep_count);
    MESHPLAN_RETURN_IF_ERROR(
        ops_.BeginOp(rank, index, op.stream, deps).WithContext(OpName(rank, index, op)));
  }
  Status st;
  if (op.kind == OpKind::kCompute) {
    st = op.phase == Phase::kForward ? ComputeForward(rank, index) : ComputeBackward(rank, index);
  } else if (op.kind == OpKind::kMerge) {
    st = Merge(rank, index);
  } else {
    st = Status::Internal("not a local op");
  }
  if (!st.ok()) return st.WithContext(OpName(rank, index, op));
  if (Local(rank))
    MESHPLAN_RETURN_IF_ERROR(
        ops_.EndOp(rank, index, op.stream).WithContext(OpName(rank, index, op)));
  return Status::Ok();
}

Result<DeviceEngine::EntryRef> DeviceEngine::Need(int32_t rank, uint16_t tensor, int32_t id,
                                                  EntryKind kind) {
  auto& store = ranks_[rank]->store;
  const auto it = store.find({tensor, id, kind});
  if (it == store.end()) {
    return Status::Internal("missing " + TensorNames(tensor) + " of " +
                            (kind == EntryKind::kSubShard ? "sub-shard " : "shard ") +
                            std::to_string(id));
  }
  return it->second;
}

// As Need, but D = rowsum(dO * O) is computed on first use.
Result<DeviceEngine::EntryRef> DeviceEngine::NeedData(int32_t rank, uint32_t op, StreamId stream,
                                                      uint16_t tensor, int32_t id, EntryKind kind) {
  if (tensor == kTensorD) return EnsureDelta(rank, op, stream, id, kind);
  return Need(rank, tensor, id, kind);
}

// Q, K, V or dO of compute-layout shard `shard` as a kernel input, with the device positions of
// its rows: the shard's layout order when the rows are in it (the usual case), else the entry's
// own order (Ulysses sub-shards of zigzag shards arrive in another order), uploaded once.
Result<TensorView> DeviceEngine::InputView(int32_t rank, const EntryRef& e, int32_t shard) {
  TensorView v;
  v.data = e->data();
  v.rows = e->rows();
  v.head_begin = e->head_begin;
  v.heads = e->heads;
  if (!Local(rank)) return v;
  if (e->device_positions == nullptr) {
    RankState& state = *ranks_[rank];
    if (e->positions == ShardPositions(schedule_.layout, shard)) {
      e->device_positions = state.shard_positions[static_cast<size_t>(shard)];
    } else if (auto it = state.positions_cache.find(e->positions);
               it != state.positions_cache.end()) {
      e->device_positions = it->second;
    } else {
      MESHPLAN_ASSIGN_OR_RETURN(
          auto ptr, ops_.Upload(rank, e->positions.data(),
                                static_cast<int64_t>(e->positions.size() * sizeof(int64_t))));
      state.static_buffers.push_back(ptr);
      e->device_positions = static_cast<const int64_t*>(ptr);
      state.positions_cache[e->positions] = e->device_positions;
    }
  }
  v.positions = e->device_positions;
  v.host_positions = e->positions.data();  // the entry outlives the op that reads the view
  return v;
}

TensorView DeviceEngine::AccView(const EntryRef& e) const {
  TensorView v;
  v.data = e->data();
  v.rows = e->rows();
  v.head_begin = e->head_begin;
  v.heads = e->heads;
  return v;
}

Status DeviceEngine::ComputeForward(int32_t rank, uint32_t index) {
  const Op& op = schedule_.ranks[rank].ops[index];
  RankState& state = *ranks_[rank];
  auto q = Need(rank, kTensorQ, op.q_shard, EntryKind::kShard);
  auto k = Need(rank, kTensorK, op.kv_shard, EntryKind::kShard);
  auto v = Need(rank, kTensorV, op.kv_shard, EntryKind::kShard);
  for (auto* e : {&q, &k, &v}) {
    if (!e->ok()) return e->status();
  }
  const int32_t g = static_cast<int32_t>(workload_.group_size());
  if (!(*q)->HasHeads(op.head_begin, op.head_count) ||
      !(*k)->HasHeads(op.head_begin / g, op.head_count / std::max(g, 1))) {
    return Status::Internal("inputs do not hold heads " + std::to_string(op.head_begin) + ".." +
                            std::to_string(op.head_begin + op.head_count - 1));
  }
  EntryRef& o = state.store[{kTensorO, op.q_shard, EntryKind::kShard}];
  EntryRef& lse = state.store[{kTensorLse, op.q_shard, EntryKind::kShard}];
  if (!o || !lse) {
    MESHPLAN_ASSIGN_OR_RETURN(
        auto fresh_o, NewEntry(rank, index, op.stream, (*q)->batch, (*q)->positions, op.head_begin,
                               op.head_count, (*q)->dim, 4));
    MESHPLAN_ASSIGN_OR_RETURN(auto fresh_lse,
                              NewEntry(rank, index, op.stream, (*q)->batch, (*q)->positions,
                                       op.head_begin, op.head_count, 1, 4));
    o = fresh_o;
    lse = fresh_lse;
    if (Local(rank)) {
      MESHPLAN_RETURN_IF_ERROR(ops_.Fill(rank, op.stream, o->f32(), 0.0f, o->elements()));
      MESHPLAN_RETURN_IF_ERROR(ops_.Fill(rank, op.stream, lse->f32(), kNegInf, lse->elements()));
    }
  }
  auto qv = InputView(rank, *q, op.q_shard);
  auto kv = InputView(rank, *k, op.kv_shard);
  auto vv = InputView(rank, *v, op.kv_shard);
  for (auto* view : {&qv, &kv, &vv}) {
    if (!view->ok()) return view->status();
  }
  o->uniform = lse->uniform = false;
  if (!Local(rank)) return Status::Ok();
  Touch(*q, rank, index, op.stream, Access::kRead, kTensorQ, op.q_shard);
  Touch(*k, rank, index, op.stream, Access::kRead, kTensorK, op.kv_shard);
  Touch(*v, rank, index, op.stream, Access::kRead, kTensorV, op.kv_shard);
  Touch(o, rank, index, op.stream, Access::kReadWrite, kTensorO, op.q_shard);
  Touch(lse, rank, index, op.stream, Access::kReadWrite, kTensorLse, op.q_shard);
  BlockProblem p = Problem(op);
  p.mask.doc_starts = state.doc_starts;
  return ops_.Forward(rank, op.stream, p, *qv, *kv, *vv, AccView(o), AccView(lse));
}

// D = rowsum(dO * O) of a shard, computed where both live, on first use by each stream (an op
// of another stream would read it with no dependency on the op that computed it).
Result<DeviceEngine::EntryRef> DeviceEngine::EnsureDelta(int32_t rank, uint32_t op, StreamId stream,
                                                         int32_t id, EntryKind kind) {
  auto& store = ranks_[rank]->store;
  if (auto it = store.find({kTensorD, id, kind}); it != store.end()) return it->second;  // received
  auto& local = ranks_[rank]->local_deltas;
  if (auto it = local.find({id, kind, stream}); it != local.end()) return it->second;
  MESHPLAN_ASSIGN_OR_RETURN(auto o, Need(rank, kTensorO, id, kind));
  MESHPLAN_ASSIGN_OR_RETURN(auto d_o, Need(rank, kTensorDO, id, kind));
  if (o->positions != d_o->positions || !d_o->HasHeads(o->head_begin, o->heads)) {
    return Status::Internal("O and dO of shard " + std::to_string(id) +
                            " do not cover the same rows and heads");
  }
  MESHPLAN_ASSIGN_OR_RETURN(auto delta, NewEntry(rank, op, stream, o->batch, o->positions,
                                                 o->head_begin, o->heads, 1, 4));
  if (Local(rank)) {
    EntryRef grad = d_o;
    if (d_o->heads != o->heads) {  // dO holds more heads: take O's slice first
      auto slice = NewEntry(rank, op, stream, o->batch, o->positions, o->head_begin, o->heads,
                            o->dim, ElemBytes(kTensorDO));
      if (!slice.ok()) return slice.status();
      RowCopy c;
      c.src = d_o->data();
      c.dst = (*slice)->data();
      c.elem_bytes = ElemBytes(kTensorDO);
      c.batch = o->batch;
      c.dim = o->dim;
      c.count = o->rows();
      c.src_rows_total = d_o->rows();
      c.dst_rows_total = o->rows();
      c.src_head0 = o->head_begin - d_o->head_begin;
      c.src_heads = d_o->heads;
      c.dst_heads = o->heads;
      c.copy_heads = o->heads;
      Touch(d_o, rank, op, stream, Access::kRead, kTensorDO, id);
      MESHPLAN_RETURN_IF_ERROR(ops_.RowCopy(rank, stream, c));
      grad = *slice;
    }
    Touch(o, rank, op, stream, Access::kRead, kTensorO, id);
    Touch(grad, rank, op, stream, Access::kRead, kTensorDO, id);
    MESHPLAN_RETURN_IF_ERROR(ops_.Delta(rank, stream, options_.type, o->f32(), grad->data(),
                                        delta->f32(), o->batch, o->rows(), o->heads, o->dim));
  }
  local[{id, kind, stream}] = delta;
  return delta;
}

Status DeviceEngine::ComputeBackward(int32_t rank, uint32_t index) {
  const Op& op = schedule_.ranks[rank].ops[index];
  RankState& state = *ranks_[rank];
  auto q = Need(rank, kTensorQ, op.q_shard, EntryKind::kShard);
  auto k = Need(rank, kTensorK, op.kv_shard, EntryKind::kShard);
  auto v = Need(rank, kTensorV, op.kv_shard, EntryKind::kShard);
  auto d_o = Need(rank, kTensorDO, op.q_shard, EntryKind::kShard);
  auto lse = Need(rank, kTensorLse, op.q_shard, EntryKind::kShard);
  for (auto* e : {&q, &k, &v, &d_o, &lse}) {
    if (!e->ok()) return e->status();
  }
  MESHPLAN_ASSIGN_OR_RETURN(
      auto delta, NeedData(rank, index, op.stream, kTensorD, op.q_shard, EntryKind::kShard));
  const int32_t g = static_cast<int32_t>(workload_.group_size());
  const int32_t kv_begin = op.head_begin / g, kv_count = op.head_count / g;
  EntryRef& dq = state.store[{kTensorDQ, op.q_shard, EntryKind::kShard}];
  if (!dq) {
    MESHPLAN_ASSIGN_OR_RETURN(
        auto fresh, NewEntry(rank, index, op.stream, (*q)->batch, (*q)->positions, op.head_begin,
                             op.head_count, (*q)->dim, 4));
    dq = fresh;
    if (Local(rank))
      MESHPLAN_RETURN_IF_ERROR(ops_.Fill(rank, op.stream, dq->f32(), 0.0f, dq->elements()));
  }
  EntryRef& dk = state.store[{kTensorDK, op.kv_shard, EntryKind::kShard}];
  EntryRef& dv = state.store[{kTensorDV, op.kv_shard, EntryKind::kShard}];
  if (!dk || !dv) {
    MESHPLAN_ASSIGN_OR_RETURN(
        auto fresh_k, NewEntry(rank, index, op.stream, (*k)->batch, (*k)->positions, kv_begin,
                               kv_count, (*k)->dim, 4));
    MESHPLAN_ASSIGN_OR_RETURN(
        auto fresh_v, NewEntry(rank, index, op.stream, (*k)->batch, (*k)->positions, kv_begin,
                               kv_count, (*k)->dim, 4));
    dk = fresh_k;
    dv = fresh_v;
    if (Local(rank)) {
      MESHPLAN_RETURN_IF_ERROR(ops_.Fill(rank, op.stream, dk->f32(), 0.0f, dk->elements()));
      MESHPLAN_RETURN_IF_ERROR(ops_.Fill(rank, op.stream, dv->f32(), 0.0f, dv->elements()));
    }
  }
  auto qv = InputView(rank, *q, op.q_shard);
  auto kv = InputView(rank, *k, op.kv_shard);
  auto vv = InputView(rank, *v, op.kv_shard);
  auto dov = InputView(rank, *d_o, op.q_shard);
  for (auto* view : {&qv, &kv, &vv, &dov}) {
    if (!view->ok()) return view->status();
  }
  dq->uniform = dk->uniform = dv->uniform = false;
  if (!Local(rank)) return Status::Ok();
  for (const auto& [e, tensor] :
       {std::pair{*q, kTensorQ}, {*d_o, kTensorDO}, {*lse, kTensorLse}, {delta, kTensorD}}) {
    Touch(e, rank, index, op.stream, Access::kRead, tensor, op.q_shard);
  }
  Touch(*k, rank, index, op.stream, Access::kRead, kTensorK, op.kv_shard);
  Touch(*v, rank, index, op.stream, Access::kRead, kTensorV, op.kv_shard);
  Touch(dq, rank, index, op.stream, Access::kReadWrite, kTensorDQ, op.q_shard);
  Touch(dk, rank, index, op.stream, Access::kReadWrite, kTensorDK, op.kv_shard);
  Touch(dv, rank, index, op.stream, Access::kReadWrite, kTensorDV, op.kv_shard);
  BlockProblem p = Problem(op);
  p.mask.doc_starts = state.doc_starts;
  return ops_.Backward(rank, op.stream, p, *qv, *kv, *vv, *dov, AccView(*lse), AccView(delta),
                       AccView(dq), AccView(dk), AccView(dv));
}

Result<DeviceEngine::EntryRef> DeviceEngine::ZeroPartial(int32_t rank, uint32_t op, StreamId stream,
                                                         uint16_t tensor, int32_t id) {
  const RankState& state = *ranks_[rank];
  const bool kv = tensor == kTensorDK || tensor == kTensorDV;
  const int32_t g = static_cast<int32_t>(workload_.group_size());
  auto e = NewEntry(rank, op, stream, workload_.batch, ShardPositions(schedule_.layout, id),
                    kv ? state.head_begin / g : state.head_begin,
                    kv ? state.head_count / g : state.head_count,
                    TensorDim(tensor, static_cast<int32_t>(workload_.head_dim)), 4);
  if (!e.ok()) return e.status();
  (*e)->uniform = true;
  if (Local(rank)) {
    MESHPLAN_RETURN_IF_ERROR(ops_.Fill(rank, stream, (*e)->f32(),
                                       tensor == kTensorLse ? kNegInf : 0.0f, (*e)->elements()));
  }
  return e;
}

Result<DeviceEngine::EntryRef> DeviceEngine::TakePartial(int32_t rank, uint32_t op, StreamId stream,
                                                         uint16_t tensor, int32_t id) {
  auto& store = ranks_[rank]->store;
  const auto it = store.find({tensor, id, EntryKind::kShard});
  if (it == store.end()) return ZeroPartial(rank, op, stream, tensor, id);
  EntryRef e = it->second;
  store.erase(it);
  return e;
}

Status DeviceEngine::MergeInto(int32_t rank, uint32_t op, StreamId stream, uint16_t tensor,
                               int32_t id, const EntryRef& acc, const EntryRef& acc_lse,
                               const EntryRef& in, const EntryRef& in_lse) {
  if (acc->elements() != in->elements() || acc->head_begin != in->head_begin ||
      acc->heads != in->heads) {
    return Status::Internal("merged partial has another shape");
  }
  if (acc->positions != in->positions) {
    // Partials of one shard built on different ranks may list its rows in different orders
    // (zigzag shards assembled from Ulysses sub-shards); only a zero partial may differ.
    if (in->uniform) return Status::Ok();  // folding zeros in changes nothing
    if (!acc->uniform)
      return Status::Internal("merged partials list the shard's rows in different orders");
    acc->positions = in->positions;
    if (acc_lse) acc_lse->positions = in->positions;
    acc->device_positions = nullptr;
  }
  acc->uniform = acc->uniform && in->uniform;
  if (acc_lse) acc_lse->uniform = acc->uniform;
  if (!Local(rank)) return Status::Ok();
  Touch(acc, rank, op, stream, Access::kReadWrite, tensor, id);
  Touch(in, rank, op, stream, Access::kRead, tensor, id);
  if (!acc_lse) return ops_.AddInto(rank, stream, acc->f32(), in->f32(), acc->elements());
  Touch(acc_lse, rank, op, stream, Access::kReadWrite, kTensorLse, id);
  Touch(in_lse, rank, op, stream, Access::kRead, kTensorLse, id);
  return ops_.MergePartial(rank, stream, acc->f32(), acc_lse->f32(), in->f32(), in_lse->f32(),
                           acc->batch * acc->rows() * acc->heads, acc->dim);
}

Status DeviceEngine::Merge(int32_t rank, uint32_t index) {
  const Op& op = schedule_.ranks[rank].ops[index];
  RankState& state = *ranks_[rank];
  for (uint16_t bit : TensorBitsOf(op.tensors)) {
    if (bit == kTensorLse) continue;  // merged with O
    const int32_t id = IdFor(op, bit);
    // Several partials of one shard may wait (a double ring's window and outer chains), received by
    // ops issued in an order other than program order: take the one received by an op this merge
    // depends on, whose data the merge is ordered after.
    const RankProgram& program = schedule_.ranks[rank];
    auto is_dep = [&](int64_t producer) {
      for (uint32_t k = op.dep_begin; k < op.dep_begin + op.dep_count; ++k) {
        if (program.deps[k] == producer) return true;
      }
      return false;
    };
    auto pop = [&](uint16_t tensor, int32_t shard, int64_t producer) -> EntryRef {
      auto it = state.incoming.find({tensor, shard});
      if (it == state.incoming.end() || it->second.empty()) return nullptr;
      auto& queue = it->second;
      auto pick = queue.begin();
      for (auto e = queue.begin(); e != queue.end(); ++e) {
        if (producer >= 0 ? (*e)->producer == producer : is_dep((*e)->producer)) {
          pick = e;
          break;
        }
      }
      EntryRef e = *pick;
      queue.erase(pick);
      return e;
    };
    EntryRef in = pop(bit, id, -1);
    if (!in)
      return Status::Internal("no received " + TensorNames(bit) + " of shard " +
                              std::to_string(id) + " to merge");
    EntryRef in_lse;
    if (bit == kTensorO) {
      in_lse = pop(kTensorLse, id, in->producer);
      if (!in_lse) return Status::Internal("received O without its LSE");
    }
    auto acc_it = state.store.find({bit, id, EntryKind::kShard});
    if (acc_it ==
        state.store.end()) {  // owner-first chains: the total comes back to an empty accumulator
      state.store[{bit, id, EntryKind::kShard}] = in;
      if (in_lse) state.store[{kTensorLse, id, EntryKind::kShard}] = in_lse;
      continue;
    }
    EntryRef acc_lse;
    if (bit == kTensorO) {
      auto lse_it = state.store.find({kTensorLse, id, EntryKind::kShard});
      if (lse_it == state.store.end()) return Status::Internal("O accumulator without its LSE");
      acc_lse = lse_it->second;
    }
    MESHPLAN_RETURN_IF_ERROR(
        MergeInto(rank, index, op.stream, bit, id, acc_it->second, acc_lse, in, in_lse));
  }
  return Status::Ok();
}

Result<DeviceEngine::EntryRef> DeviceEngine::TransferTo(int32_t src_rank, uint32_t src_op,
                                                        StreamId src_stream, const EntryRef& src,
                                                        uint16_t tensor, int32_t id,
                                                        int32_t dst_rank, uint32_t dst_op,
                                                        StreamId dst_stream,
                                                        std::vector<Transfer>* transfers) {
  auto dst = NewEntry(dst_rank, dst_op, dst_stream, src->batch, src->positions, src->head_begin,
                      src->heads, src->dim, src->elem_bytes);
  if (!dst.ok()) return dst.status();
  (*dst)->uniform = src->uniform;
  (*dst)->producer = dst_op;
  Touch(src, src_rank, src_op, src_stream, Access::kRead, tensor, id);
  if (Local(src_rank) || Local(dst_rank)) {
    Transfer t;
    t.src_rank = src_rank;
    t.dst_rank = dst_rank;
    t.src_op = src_op;
    t.dst_op = dst_op;
    t.src_stream = src_stream;
    t.dst_stream = dst_stream;
    t.src = src->data();
    t.dst = (*dst)->data();
    t.bytes = src->bytes();
    t.silent = src_rank == options_.silent_rank;
    transfers->push_back(t);
  }
  return dst;
}

Status DeviceEngine::IssueExchange(const LaunchStep& step) {
  // Every op of the step begins (its stream waits for its deps), then all transfers are posted
  // together, then the work that consumes what arrived, then every op ends.
  std::vector<std::pair<int32_t, uint32_t>> members;
  ForEachStepOp(step, [&members](int32_t rank, uint32_t index) {
    members.push_back({rank, index});
  });
  for (const auto& [rank, index] : members) MESHPLAN_RETURN_IF_ERROR(Injected(rank, index));
  for (const auto& [rank, index] : members) {
    if (!Local(rank)) continue;
    const RankProgram& program = schedule_.ranks[rank];
    const Op& op = program.ops[index];
    std::vector<uint32_t> deps(program.deps.begin() + op.dep_begin,
                               program.deps.begin() + op.dep_begin + op.dep_count);
    MESHPLAN_RETURN_IF_ERROR(
        ops_.BeginOp(rank, index, op.stream, deps).WithContext(OpName(rank, index, op)));
  }
  std::vector<Transfer> transfers;
  std::vector<std::function<Status()>> after;
  for (const PairLaunch& p : step.pairs)
    MESHPLAN_RETURN_IF_ERROR(PreparePair(p, &transfers, &after));
  for (const CollectiveLaunch& c : step.collectives) {
    const int32_t first = schedule_.groups[c.group].front();
    const Op& op = schedule_.ranks[first].ops[c.ops.front()];
    Status st;
    switch (op.kind) {
      case OpKind::kAllGather:
        st = PrepareAllGather(c, &transfers, &after);
        break;
      case OpKind::kReduceScatter:
        st = PrepareReduceScatter(c, &transfers, &after);
        break;
      case OpKind::kAllToAll:
        st = PrepareAllToAll(c, &transfers, &after);
        break;
      default:
        st = Status::Internal("not a collective");
    }
    MESHPLAN_RETURN_IF_ERROR(
        st.WithContext(OpName(first, c.ops.front(), op) + " of group " + std::to_string(c.group)));
  }
  if (!transfers.empty()) MESHPLAN_RETURN_IF_ERROR(ops_.Exchange(transfers));
  for (auto& fn : after) MESHPLAN_RETURN_IF_ERROR(fn());
  for (const auto& [rank, index] : members) {
    if (!Local(rank)) continue;
    const Op& op = schedule_.ranks[rank].ops[index];
    MESHPLAN_RETURN_IF_ERROR(
        ops_.EndOp(rank, index, op.stream).WithContext(OpName(rank, index, op)));
  }
  return Status::Ok();
}

Status DeviceEngine::PreparePair(const PairLaunch& pair, std::vector<Transfer>* transfers,
                                 std::vector<std::function<Status()>>*) {
  const Op& send = schedule_.ranks[pair.src].ops[pair.send_op];
  const Op& recv = schedule_.ranks[pair.dst].ops[pair.recv_op];
  if (send.tensors != recv.tensors) {
    return Status::Internal(
        OpName(pair.src, pair.send_op, send) + " sends " + TensorNames(send.tensors) + " but " +
        OpName(pair.dst, pair.recv_op, recv) + " expects " + TensorNames(recv.tensors));
  }
  RankState& dst_state = *ranks_[pair.dst];
  for (uint16_t bit : TensorBitsOf(send.tensors)) {
    const int32_t id = IdFor(send, bit);
    EntryRef src;
    if (HandsOver(bit, send.tensors)) {
      auto taken = TakePartial(pair.src, pair.send_op, send.stream, bit, id);
      if (!taken.ok()) return taken.status().WithContext(OpName(pair.src, pair.send_op, send));
      src = *taken;
    } else {
      auto found = NeedData(pair.src, pair.send_op, send.stream, bit, id, EntryKind::kShard);
      if (!found.ok()) return found.status().WithContext(OpName(pair.src, pair.send_op, send));
      src = *found;
    }
    auto dst = TransferTo(pair.src, pair.send_op, send.stream, src, bit, id, pair.dst, pair.recv_op,
                          recv.stream, transfers);
    if (!dst.ok()) return dst.status().WithContext(OpName(pair.dst, pair.recv_op, recv));
    if (HandsOver(bit, recv.tensors)) {
      dst_state.incoming[{bit, id}].push_back(*dst);
    } else {
      KeepCopy(dst_state.store, {bit, id, EntryKind::kShard}, *dst);
    }
  }
  return Status::Ok();
}

Status DeviceEngine::PrepareAllGather(const CollectiveLaunch& c, std::vector<Transfer>* transfers,
                                      std::vector<std::function<Status()>>*) {
  const auto& members = schedule_.groups[c.group];
  const int p = static_cast<int>(members.size());
  for (int m = 0; m < p; ++m) {
    const int32_t rank = members[m];
    const Op& op = schedule_.ranks[rank].ops[c.ops[m]];
    for (uint16_t bit : TensorBitsOf(op.tensors)) {
      const int32_t id = IdFor(op, bit);
      MESHPLAN_ASSIGN_OR_RETURN(auto own,
                                NeedData(rank, c.ops[m], op.stream, bit, id, EntryKind::kShard));
      for (int to = 0; to < p; ++to) {
        if (to == m) continue;
        const int32_t dst_rank = members[to];
        const Op& dst_op = schedule_.ranks[dst_rank].ops[c.ops[to]];
        auto dst = TransferTo(rank, c.ops[m], op.stream, own, bit, id, dst_rank, c.ops[to],
                              dst_op.stream, transfers);
        if (!dst.ok()) return dst.status();
        KeepCopy(ranks_[dst_rank]->store, {bit, id, EntryKind::kShard}, *dst);
      }
    }
  }
  return Status::Ok();
}

Status DeviceEngine::PrepareReduceScatter(const CollectiveLaunch& c,
                                          std::vector<Transfer>* transfers,
                                          std::vector<std::function<Status()>>* after) {
  const auto& members = schedule_.groups[c.group];
  const int p = static_cast<int>(members.size());
  std::vector<int32_t> own(p);
  for (int m = 0; m < p; ++m) {
    const Op& op = schedule_.ranks[members[m]].ops[c.ops[m]];
    const uint16_t first = static_cast<uint16_t>(op.tensors & (~op.tensors + 1));
    own[m] = IdFor(op, first);
  }
  // Every member hands each other member its partials of that member's shard; each member then
  // folds what arrived into its own accumulator, in member order.
  std::vector<std::vector<std::pair<uint16_t, EntryRef>>> arrived(
      p);  // per destination, per sender in order
  for (int m = 0; m < p; ++m) {
    const int32_t rank = members[m];
    const Op& op = schedule_.ranks[rank].ops[c.ops[m]];
    for (int to = 0; to < p; ++to) {
      if (to == m) continue;
      const int32_t dst_rank = members[to];
      const Op& dst_op = schedule_.ranks[dst_rank].ops[c.ops[to]];
      for (uint16_t bit : TensorBitsOf(op.tensors)) {
        MESHPLAN_ASSIGN_OR_RETURN(auto part, TakePartial(rank, c.ops[m], op.stream, bit, own[to]));
        auto dst = TransferTo(rank, c.ops[m], op.stream, part, bit, own[to], dst_rank, c.ops[to],
                              dst_op.stream, transfers);
        if (!dst.ok()) return dst.status();
        arrived[to].push_back({bit, *dst});
      }
    }
  }
  for (int to = 0; to < p; ++to) {
    after->push_back([this, to, &members, c, own, received = arrived[to]]() -> Status {
      const int32_t rank = members[to];
      const uint32_t index = c.ops[to];
      const Op& op = schedule_.ranks[rank].ops[index];
      RankState& state = *ranks_[rank];
      // `received` holds, per sender, the pieces in Bits order: O is followed by its LSE.
      for (size_t i = 0; i < received.size(); ++i) {
        const auto& [bit, in] = received[i];
        if (bit == kTensorLse) continue;
        EntryRef in_lse;
        if (bit == kTensorO) {
          for (size_t j = i + 1; j < received.size() && !in_lse; ++j) {
            if (received[j].first == kTensorLse) in_lse = received[j].second;
          }
          if (!in_lse) return Status::Internal("reduce-scatter of O without its LSE");
        }
        EntryRef& acc = state.store[{bit, own[to], EntryKind::kShard}];
        if (!acc) {
          MESHPLAN_ASSIGN_OR_RETURN(auto zero, ZeroPartial(rank, index, op.stream, bit, own[to]));
          acc = zero;
          if (bit == kTensorO) {
            MESHPLAN_ASSIGN_OR_RETURN(auto zero_lse,
                                      ZeroPartial(rank, index, op.stream, kTensorLse, own[to]));
            state.store[{kTensorLse, own[to], EntryKind::kShard}] = zero_lse;
          }
        }
        EntryRef acc_lse;
        if (bit == kTensorO) acc_lse = state.store[{kTensorLse, own[to], EntryKind::kShard}];
        MESHPLAN_RETURN_IF_ERROR(
            MergeInto(rank, index, op.stream, bit, own[to], acc, acc_lse, in, in_lse));
      }
      return Status::Ok();
    });
  }
  return Status::Ok();
}

// Ulysses all-to-all inside a group of U ranks sharing one compute shard rho (rank = u + U*rho
// holds input sub-shard `rank`), as the CPU executor does it. Sequence -> heads: every member
// ends with the whole shard for its slice of heads. Heads -> sequence: every member ends with its
// sub-shard for all heads.
Status DeviceEngine::PrepareAllToAll(const CollectiveLaunch& c, std::vector<Transfer>* transfers,
                                     std::vector<std::function<Status()>>* after) {
  const auto& members = schedule_.groups[c.group];
  const int u = static_cast<int>(members.size());
  const Op& first = schedule_.ranks[members[0]].ops[c.ops[0]];
  const bool to_heads = first.a2a == A2ADirection::kSeqToHeads;
  for (uint16_t bit : TensorBitsOf(first.tensors)) {
    const int32_t heads = HeadsOf(bit), slice = heads / u;
    const int32_t dim = TensorDim(bit, static_cast<int32_t>(workload_.head_dim));
    const int32_t elem = ElemBytes(bit);
    // received[to][from]: the piece member `from` contributes to member `to`.
    std::vector<std::vector<EntryRef>> received(u, std::vector<EntryRef>(u));
    for (int m = 0; m < u; ++m) {
      const int32_t rank = members[m];
      const uint32_t index = c.ops[m];
      const StreamId stream = schedule_.ranks[rank].ops[index].stream;
      const int32_t shard = static_cast<int32_t>(rank / schedule_.layout.subdivide);
      EntryRef mine;
      if (to_heads) {
        MESHPLAN_ASSIGN_OR_RETURN(auto found,
                                  NeedData(rank, index, stream, bit, rank, EntryKind::kSubShard));
        mine = found;
      } else {
        MESHPLAN_ASSIGN_OR_RETURN(auto found, Need(rank, bit, shard, EntryKind::kShard));
        mine = found;
      }
      std::unordered_map<int64_t, int64_t> row_of;
      if (!to_heads) {
        for (int64_t r = 0; r < mine->rows(); ++r) row_of[mine->positions[r]] = r;
      }
      for (int to = 0; to < u; ++to) {
        // The piece: (heads slice `to`, all rows) or (all heads, rows of member `to`'s sub-shard).
        std::vector<int64_t> rows, positions;
        int32_t head_begin = mine->head_begin, piece_heads = mine->heads;
        if (to_heads) {
          positions = mine->positions;
          head_begin = to * slice;
          piece_heads = slice;
          if (!mine->HasHeads(head_begin, piece_heads))
            return Status::Internal("sub-shard lacks heads to scatter");
        } else {
          for (int64_t pos : SubShardPositions(schedule_.layout, members[to])) {
            const auto it = row_of.find(pos);
            if (it == row_of.end())
              return Status::Internal("shard lacks token " + std::to_string(pos));
            rows.push_back(it->second);
            positions.push_back(pos);
          }
        }
        MESHPLAN_ASSIGN_OR_RETURN(auto piece, NewEntry(rank, index, stream, mine->batch, positions,
                                                       head_begin, piece_heads, dim, elem));
        if (Local(rank)) {
          RowCopy copy;
          copy.src = mine->data();
          copy.dst = piece->data();
          copy.elem_bytes = elem;
          copy.batch = mine->batch;
          copy.dim = dim;
          copy.count = piece->rows();
          copy.src_rows_total = mine->rows();
          copy.dst_rows_total = piece->rows();
          copy.src_head0 = head_begin - mine->head_begin;
          copy.src_heads = mine->heads;
          copy.dst_heads = piece_heads;
          copy.copy_heads = piece_heads;
          if (!to_heads) {
            MESHPLAN_ASSIGN_OR_RETURN(
                auto index_array, ops_.Upload(rank, rows.data(),
                                              static_cast<int64_t>(rows.size() * sizeof(int64_t))));
            ranks_[rank]->static_buffers.push_back(index_array);
            copy.src_rows = static_cast<const int64_t*>(index_array);
          }
          Touch(mine, rank, index, stream, Access::kRead, bit, to_heads ? rank : shard);
          MESHPLAN_RETURN_IF_ERROR(ops_.RowCopy(rank, stream, copy));
        }
        if (to == m) {
          received[to][m] = piece;
        } else {
          const int32_t dst_rank = members[to];
          const StreamId dst_stream = schedule_.ranks[dst_rank].ops[c.ops[to]].stream;
          MESHPLAN_ASSIGN_OR_RETURN(
              auto dst, TransferTo(rank, index, stream, piece, bit, shard, dst_rank, c.ops[to],
                                   dst_stream, transfers));
          received[to][m] = dst;
        }
      }
      // Final gradients are not needed in the head layout afterwards; the output O is kept (a
      // cached backward computes D from it).
      if (!to_heads && bit != kTensorO && bit != kTensorLse)
        ranks_[rank]->store.erase({bit, shard, EntryKind::kShard});
    }
    for (int to = 0; to < u; ++to) {
      after->push_back([this, bit, to, to_heads, heads, slice, dim, elem, rank = members[to],
                        index = c.ops[to], pieces = received[to]]() -> Status {
        const StreamId stream = schedule_.ranks[rank].ops[index].stream;
        std::vector<int64_t> positions;
        if (to_heads) {
          for (const EntryRef& e : pieces)
            positions.insert(positions.end(), e->positions.begin(), e->positions.end());
        } else {
          positions = pieces[to]->positions;
        }
        auto whole = to_heads ? NewEntry(rank, index, stream, workload_.batch, positions,
                                         to * slice, slice, dim, elem)
                              : NewEntry(rank, index, stream, workload_.batch, positions, 0, heads,
                                         dim, elem);
        if (!whole.ok()) return whole.status();
        int64_t offset = 0;
        for (const EntryRef& e : pieces) {
          if (Local(rank)) {
            RowCopy copy;
            copy.src = e->data();
            copy.dst = (*whole)->data();
            copy.elem_bytes = elem;
            copy.batch = e->batch;
            copy.dim = dim;
            copy.count = e->rows();
            copy.src_rows_total = e->rows();
            copy.dst_row0 = to_heads ? offset : 0;
            copy.dst_rows_total = (*whole)->rows();
            copy.src_heads = e->heads;
            copy.dst_head0 = e->head_begin - (*whole)->head_begin;
            copy.dst_heads = (*whole)->heads;
            copy.copy_heads = e->heads;
            Touch(e, rank, index, stream, Access::kRead, bit, rank);
            MESHPLAN_RETURN_IF_ERROR(ops_.RowCopy(rank, stream, copy));
          }
          offset += e->rows();
        }
        auto& store = ranks_[rank]->store;
        if (to_heads) {
          store[{bit, static_cast<int32_t>(rank / schedule_.layout.subdivide), EntryKind::kShard}] =
              *whole;
        } else {
          store[{bit, rank, EntryKind::kSubShard}] = *whole;
        }
        return Status::Ok();
      });
    }
  }
  return Status::Ok();
}

Status DeviceEngine::CollectOutputs(AttentionTensors<float>* outputs,
                                    std::vector<uint8_t>* covered) {
  for (int32_t r = 0; r < schedule_.num_ranks; ++r) {
    if (!Local(r)) continue;
    for (const auto& [key, e] : ranks_[r]->store) {
      const uint16_t t = key.tensor;
      if (t != kTensorO && t != kTensorLse && t != kTensorDQ && t != kTensorDK && t != kTensorDV)
        continue;
      if (outputs == nullptr) {
        // Coverage only (a run whose outputs nobody reads): the shape, no data, no download.
        exec::Entry shape;
        shape.batch = e->batch;
        shape.positions = e->positions;
        shape.head_begin = e->head_begin;
        shape.heads = e->heads;
        shape.dim = e->dim;
        WriteOutputEntry(t, shape, workload_, nullptr, covered);
        continue;
      }
      exec::Entry host =
          exec::Entry::Zeros(e->batch, e->positions, e->head_begin, e->heads, e->dim);
      MESHPLAN_RETURN_IF_ERROR(ops_.Download(r, host.data.data(), e->data(), e->bytes()));
      WriteOutputEntry(t, host, workload_, outputs, covered);
    }
  }
  return Status::Ok();
}

Result<DeviceRunResult> RunEngine(const Schedule& schedule, const Workload& workload,
                                  const InputSource& inputs, const RunOptions& options,
                                  DeviceOps& ops, std::vector<uint8_t> local,
                                  AttentionTensors<float>* outputs, std::vector<uint8_t>* covered,
                                  std::mutex* collect_lock) {
  DeviceEngine engine(schedule, workload, options, ops, std::move(local));
  MESHPLAN_RETURN_IF_ERROR(engine.LoadInputs(inputs));
  auto run = engine.Run();
  if (!run.ok()) return run.status();
  std::unique_lock<std::mutex> lock;
  if (collect_lock != nullptr) lock = std::unique_lock<std::mutex>(*collect_lock);
  MESHPLAN_RETURN_IF_ERROR(engine.CollectOutputs(outputs, covered));
  return run;
}

}  // namespace meshplan::exec
