#include "executor/execute.h"

#include <algorithm>
#include <thread>

#include "executor/gather.h"
#include "executor/thread_transport.h"

namespace meshplan::exec {
namespace {

// Puts rank r's input sub-shard (all heads) into its store.
void LoadInputs(const Schedule& s, const Workload& w, const AttentionTensors<float>& in, int rank, ShardStore& store) {
  const std::vector<int64_t> positions = SubShardPositions(s.layout, rank);
  const EntryKind kind = s.layout.subdivide > 1 ? EntryKind::kSubShard : EntryKind::kShard;
  auto load = [&](uint16_t bit, const TensorF& t) {
    Entry e = Entry::Zeros(w.batch, positions, 0, static_cast<int32_t>(t.heads), static_cast<int32_t>(t.dim));
    for (int64_t b = 0; b < w.batch; ++b) {
      for (size_t r = 0; r < positions.size(); ++r) {
        std::copy_n(&t.at(b, positions[r], 0, 0), static_cast<size_t>(t.heads * t.dim),
                    e.At(b, static_cast<int64_t>(r), 0));
      }
    }
    store.Put({bit, rank, kind}, std::move(e));
  };
  load(kTensorQ, in.q);
  load(kTensorK, in.k);
  load(kTensorV, in.v);
  if (HasBackward(w.pass)) load(kTensorDO, in.d_o);
}

// Writes this rank's final O, LSE, dQ, dK, dV entries into the global outputs.
void StoreOutputs(ShardStore& store, const Workload& w, AttentionTensors<float>* out, std::vector<uint8_t>* covered) {
  for (auto& [key, entry] : store.All()) {
    if (key.kind == EntryKind::kIncoming) continue;
    WriteOutputEntry(key.tensor, *entry, w, out, covered);
  }
}

}  // namespace

static TensorF* OutputFor(uint16_t bit, AttentionTensors<float>& out) {
  switch (bit) {
    case kTensorO:
      return &out.o;
    case kTensorLse:
      return &out.lse;
    case kTensorDQ:
      return &out.dq;
    case kTensorDK:
      return &out.dk;
    case kTensorDV:
      return &out.dv;
    default:
      return nullptr;
  }
}

void WriteOutputEntry(uint16_t tensor, const Entry& entry, const Workload& w, AttentionTensors<float>* out,
                      std::vector<uint8_t>* covered) {
  if ((tensor == kTensorO || tensor == kTensorLse) && !HasForward(w.pass)) return;
  if ((tensor == kTensorDQ || tensor == kTensorDK || tensor == kTensorDV) && !HasBackward(w.pass)) return;
  TensorF* t = OutputFor(tensor, *out);
  if (t == nullptr) return;
  const size_t base = tensor == kTensorO ? 0 : tensor == kTensorLse ? 1 : tensor == kTensorDQ ? 2 : tensor == kTensorDK ? 3 : 4;
  for (int64_t b = 0; b < entry.batch; ++b) {
    for (int64_t r = 0; r < entry.rows(); ++r) {
      for (int32_t h = entry.head_begin; h < entry.head_begin + entry.heads; ++h) {
        std::copy_n(entry.At(b, r, h), static_cast<size_t>(entry.dim), &t->at(b, entry.positions[r], h, 0));
        if (covered != nullptr) {
          const int64_t cell = ((b * w.seq_len + entry.positions[r]) * w.q_heads + h);
          (*covered)[base * static_cast<size_t>(w.batch * w.seq_len * w.q_heads) + static_cast<size_t>(cell)] = 1;
        }
      }
    }
  }
}

AttentionTensors<float> OutputTensors(const Workload& w) {
  AttentionTensors<float> t;
  t.o = TensorF(w.batch, w.seq_len, w.q_heads, w.head_dim);
  t.lse = TensorF(w.batch, w.seq_len, w.q_heads, 1);
  t.dq = TensorF(w.batch, w.seq_len, w.q_heads, w.head_dim);
  t.dk = TensorF(w.batch, w.seq_len, w.kv_heads, w.head_dim);
  t.dv = TensorF(w.batch, w.seq_len, w.kv_heads, w.head_dim);
  return t;
}

Status ExecuteRank(const Schedule& schedule, const Workload& workload, const AttentionTensors<float>& inputs,
                   Transport& transport, const RunOptions& options, AttentionTensors<float>* outputs,
                   std::vector<uint8_t>* covered, std::vector<OpTiming>* timings) {
  ShardStore store;
  LoadInputs(schedule, workload, inputs, transport.rank(), store);
  RankRunner runner(schedule, transport.rank(), workload, transport, store, options, Clock::now());
  MESHPLAN_RETURN_IF_ERROR(runner.Run());
  StoreOutputs(store, workload, outputs, covered);
  if (timings != nullptr) *timings = runner.timings();
  return Status::Ok();
}

Result<ExecutionResult> ExecuteOnThreads(const Schedule& schedule, const Workload& workload,
                                         const AttentionTensors<float>& inputs, const RunOptions& options) {
  if (HasBackward(workload.pass) && !HasForward(workload.pass)) {
    return Status::Invalid("execute a backward together with its forward (pass fwd+bwd)");
  }
  const int ranks = static_cast<int>(schedule.num_ranks);
  auto transports = MakeThreadTransports(ranks);
  std::vector<ShardStore> stores(static_cast<size_t>(ranks));
  std::vector<std::unique_ptr<RankRunner>> runners;
  const Clock::time_point start = Clock::now();
  for (int r = 0; r < ranks; ++r) {
    LoadInputs(schedule, workload, inputs, r, stores[r]);
    runners.push_back(std::make_unique<RankRunner>(schedule, r, workload, *transports[r], stores[r], options, start));
  }
  std::vector<Status> status(static_cast<size_t>(ranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) threads.emplace_back([&, r] { status[r] = runners[r]->Run(); });
  for (auto& t : threads) t.join();
  ExecutionResult result;
  result.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  // Report the root cause: the first failure that is not another rank's abort.
  const Status* first = nullptr;
  for (const Status& st : status) {
    if (st.ok()) continue;
    if (first == nullptr || (first->message().find("aborted") != std::string::npos &&
                             st.message().find("aborted") == std::string::npos)) {
      first = &st;
    }
  }
  if (first != nullptr) return *first;
  result.outputs = OutputTensors(workload);
  std::vector<uint8_t> covered(static_cast<size_t>(5 * workload.batch * workload.seq_len * workload.q_heads), 0);
  for (int r = 0; r < ranks; ++r) {
    StoreOutputs(stores[r], workload, &result.outputs, &covered);
    result.timings.push_back(runners[r]->timings());
  }
  MESHPLAN_RETURN_IF_ERROR(CheckCoverage(workload, covered));
  return result;
}

}  // namespace meshplan::exec
