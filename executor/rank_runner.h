// Runs one rank's program of a schedule (core/schedule.h) for real: one thread per stream, so
// compute and communication progress concurrently; each op starts when it reaches the head of
// its stream and its deps are done. Data lives in a ShardStore; messages go through a Transport.
// docs/executor.md describes how every op kind maps to data movement and kernels.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "core/schedule.h"
#include "core/workload.h"
#include "executor/block_kernels.h"
#include "executor/shard_store.h"
#include "executor/transport.h"

namespace meshplan::exec {

struct RunOptions {
  // A receive (or collective) that waits longer than this fails, naming the rank, op and peer.
  std::chrono::milliseconds recv_timeout{30000};
  // Fault injection (tests and `meshplan execute --inject-*`): rank `fail_rank` fails at its op
  // `fail_op` as if that op had failed; rank `silent_rank` drops every message it sends, like a
  // peer that never answers. -1 disables.
  int fail_rank = -1;
  int64_t fail_op = -1;
  int silent_rank = -1;
};

struct OpTiming {
  double start_s = 0;  // since the run's common start
  double end_s = 0;
};

class RankRunner {
 public:
  // `schedule` and `workload` must describe the same plan; the store holds this rank's inputs.
  RankRunner(const Schedule& schedule, int rank, const Workload& workload, Transport& transport,
             ShardStore& store, const RunOptions& options, Clock::time_point start);
  // Runs every op; the first failure (with its rank and op) is returned and aborts the transport
  // so the other ranks stop too.
  Status Run();
  const std::vector<OpTiming>& timings() const { return timings_; }

 private:
  void StreamLoop(int stream);
  Status Execute(uint32_t index);
  Status ComputeForward(const Op& op);
  Status ComputeBackward(const Op& op);
  Status Merge(const Op& op);
  Status Send(const Op& op);
  Status Recv(const Op& op);
  Status AllGather(const Op& op);
  Status ReduceScatter(const Op& op);
  Status AllToAll(const Op& op);

  ShardStore::Ref Need(uint16_t tensor, int32_t id, EntryKind kind, const Op& op, Status* error);
  ShardStore::Ref EnsureDelta(int32_t id, EntryKind kind);
  // A partial of `tensor` for shard `id` that this rank never computed (every block it would
  // add was masked out): zeros (O: zero rows with LSE -inf) shaped like the shard's inputs.
  std::optional<Entry> ZeroPartial(uint16_t tensor, int32_t id);
  std::optional<Entry> TakePartial(uint16_t tensor, int32_t id);
  int32_t IdFor(const Op& op, uint16_t tensor) const;
  int32_t HeadsOf(uint16_t tensor) const;
  int64_t CollectiveTag(const Op& op, int bit, int from);
  // Every message this rank sends goes through here (fault injection drops them).
  Status Post(int peer, int64_t tag, const std::vector<float>& payload);
  void Fail(const Status& status);

  const Schedule& schedule_;
  const RankProgram& program_;
  const int rank_;
  const Workload& workload_;
  Transport& transport_;
  ShardStore& store_;
  RunOptions options_;
  Clock::time_point start_;
  MaskRule mask_;
  float scale_;

  std::mutex mutex_;
  std::condition_variable done_cv_;
  std::vector<uint8_t> done_;
  std::atomic<bool> failed_{false};
  Status first_error_;
  std::mutex delta_mutex_;
  std::vector<OpTiming> timings_;
  std::vector<int64_t> collective_seq_;  // per group, collectives issued so far
  int32_t head_begin_ = 0, head_count_ = 0;  // query heads this rank computes
  // Received partials awaiting their Merge, in arrival order per (tensor, shard): two partials of
  // one shard can arrive before the first is merged (LoongTrain's window and outer chains).
  std::mutex incoming_mutex_;
  std::map<std::pair<uint16_t, int32_t>, std::deque<Entry>> incoming_;
};

}  // namespace meshplan::exec
