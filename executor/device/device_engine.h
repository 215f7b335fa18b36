// The execution engine: the one interpreter of a Schedule, for every backend (DeviceOps: the host
// streams of host_device_ops.h or CUDA) and every transport. It walks the launch order
// (launch_order.h) and, for every op, decides on the host which buffers the op reads and writes
// and enqueues the op's kernels and transfers through DeviceOps. Data placement therefore follows
// host issue order; the device follows the schedule's order through stream order and events, so
// a dependency the schedule lacks is a race on every backend (RunOptions::check_dependencies
// names it).
//
// Semantics of every op (docs/executor-internals.md): shard entries, hand-over of partials, zero
// partials for blocks a rank never computed, queued incoming partials, Ulysses all-to-alls in both
// directions. Inputs Q, K, V, dO are held in RunOptions::type; O, LSE, D and the gradients in fp32.
//
// Every process runs the engine for all ranks but enqueues device work only for the ranks it
// runs (`local`): the metadata of remote ranks (shapes, positions, heads) is tracked on the host,
// so NCCL receives know their sizes without a message.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "core/base/status.h"
#include "core/plan/schedule.h"
#include "core/workload/workload.h"
#include "executor/device/device_ops.h"
#include "executor/device/launch_order.h"
#include "executor/device/run_options.h"
#include "executor/device/shard_store.h"
#include "executor/io/input_source.h"
#include "executor/io/tensor.h"
#include "executor/timing/op_timing.h"

namespace meshplan::exec {

struct DeviceRunResult {
  std::vector<std::vector<OpTiming>> times;  // [rank][op]; empty for ranks not run here
  std::vector<int64_t> peak_bytes;           // per local rank: most memory the engine held at once
};

class DeviceEngine {
 public:
  // REQUIRES: schedule expanded for workload; HasForward(workload.pass) when it has a backward.
  DeviceEngine(const Schedule& schedule, const Workload& workload, const RunOptions& options,
               DeviceOps& ops, std::vector<uint8_t> local);
  ~DeviceEngine();

  // Reads from `inputs` the rows of every local rank's input sub-shard of Q, K, V (and dO for a
  // backward), and nothing else, rounds them to options.type and uploads them.
  Status LoadInputs(const InputSource& inputs);
  // Issues every op in launch order and waits for the device.
  Result<DeviceRunResult> Run();
  // Writes the outputs the local ranks produced into `outputs` (sized by OutputTensors; null: only
  // marks them), marking them in `covered` (CoverageSize elements).
  Status CollectOutputs(AttentionTensors<float>* outputs, std::vector<uint8_t>* covered);

  struct Block;
  struct Entry;
  using EntryRef = std::shared_ptr<Entry>;

 private:
  struct RankState;

  bool Local(int32_t rank) const { return local_[rank] != 0; }
  Status Issue(const LaunchStep& step);
  Status Injected(int32_t rank, uint32_t index) const;
  Status IssueLocal(int32_t rank, uint32_t index);
  Status IssueExchange(const LaunchStep& step);
  Status ComputeForward(int32_t rank, uint32_t index);
  Status ComputeBackward(int32_t rank, uint32_t index);
  Status Merge(int32_t rank, uint32_t index);
  Status PreparePair(const PairLaunch& pair, std::vector<Transfer>* transfers,
                     std::vector<std::function<Status()>>* after);
  Status PrepareAllGather(const CollectiveLaunch& c, std::vector<Transfer>* transfers,
                          std::vector<std::function<Status()>>* after);
  Status PrepareReduceScatter(const CollectiveLaunch& c, std::vector<Transfer>* transfers,
                              std::vector<std::function<Status()>>* after);
  Status PrepareAllToAll(const CollectiveLaunch& c, std::vector<Transfer>* transfers,
                         std::vector<std::function<Status()>>* after);

  // Entries.
  Result<EntryRef> NewEntry(int32_t rank, uint32_t op, StreamId stream, int64_t batch,
                            std::vector<int64_t> positions, int32_t head_begin, int32_t heads,
                            int32_t dim, int32_t elem_bytes, void* adopt = nullptr);
  Result<EntryRef> Need(int32_t rank, uint16_t tensor, int32_t id, EntryKind kind);
  Result<EntryRef> NeedData(int32_t rank, uint32_t op, StreamId stream, uint16_t tensor, int32_t id,
                            EntryKind kind);
  Result<EntryRef> EnsureDelta(int32_t rank, uint32_t op, StreamId stream, int32_t id,
                               EntryKind kind);
  Result<EntryRef> ZeroPartial(int32_t rank, uint32_t op, StreamId stream, uint16_t tensor,
                               int32_t id);
  Result<EntryRef> TakePartial(int32_t rank, uint32_t op, StreamId stream, uint16_t tensor,
                               int32_t id);
  // A fresh entry on `dst` shaped like `src` and a transfer of src's data into it.
  Result<EntryRef> TransferTo(int32_t src_rank, uint32_t src_op, StreamId src_stream,
                              const EntryRef& src, uint16_t tensor, int32_t id, int32_t dst_rank,
                              uint32_t dst_op, StreamId dst_stream,
                              std::vector<Transfer>* transfers);
  Status MergeInto(int32_t rank, uint32_t op, StreamId stream, uint16_t tensor, int32_t id,
                   const EntryRef& acc, const EntryRef& acc_lse, const EntryRef& in,
                   const EntryRef& in_lse);
  void Use(const EntryRef& e, uint32_t op, StreamId stream);
  // Records that `op` of `rank` reads (or reads and writes) the entry's buffer, holding `tensor`
  // of shard `id`: for freeing (Use) and, when checking, for the happens-before check.
  enum class Access : uint8_t { kRead, kReadWrite };
  void Touch(const EntryRef& e, int32_t rank, uint32_t op, StreamId stream, Access access,
             uint16_t tensor, int32_t id);
  // Whether op `before` of `rank` ends before op `after` starts, by stream order and deps.
  bool OrderedBefore(int32_t rank, int64_t before, uint32_t after) const;
  void BuildOrderClocks();
  Result<TensorView> InputView(int32_t rank, const EntryRef& e, int32_t shard);
  TensorView AccView(const EntryRef& e) const;
  Status ReleaseDead();

  void ForEachStepOp(const LaunchStep& step,
                     const std::function<void(int32_t, uint32_t)>& fn) const;
  void ForEachInputKey(const Op& op, const std::function<void(uint16_t, int32_t)>& fn) const;
  int32_t IdFor(const Op& op, uint16_t tensor) const;
  int32_t HeadsOf(uint16_t tensor) const;
  int32_t ElemBytes(uint16_t tensor) const;
  BlockProblem Problem(const Op& op) const;

  const Schedule& schedule_;
  const Workload& workload_;
  RunOptions options_;
  DeviceOps& ops_;
  std::vector<uint8_t> local_;
  std::vector<std::unique_ptr<RankState>> ranks_;
  // The documents' first positions of a document mask (DeviceMask::doc_starts' convention; empty
  // otherwise), set by LoadInputs: uploaded to every local rank, and given to every block in host
  // memory (DeviceMask::host_doc_starts) for backends that split blocks on the host.
  std::vector<int64_t> doc_starts_;
  // Buffers whose last entry went away, freed after the step that dropped them ended.
  std::shared_ptr<std::vector<std::unique_ptr<Block>>> dead_;
  Status release_error_;
  // Happens-before checker: per local rank and op, the last op of each stream that ends before it
  // starts (by deps and stream order); the first violation found.
  std::vector<std::vector<std::array<int64_t, 4>>> order_clocks_;
  Status order_error_;
};

// One engine over `ops` for the ranks marked in `local`: loads the inputs, runs, and writes what
// the local ranks produced into `outputs` (sized by OutputTensors; null: coverage only) and
// `covered` (CoverageSize), holding `collect_lock` (if any) while it writes them.
Result<DeviceRunResult> RunEngine(const Schedule& schedule, const Workload& workload,
                                  const InputSource& inputs, const RunOptions& options,
                                  DeviceOps& ops, std::vector<uint8_t> local,
                                  AttentionTensors<float>* outputs, std::vector<uint8_t>* covered,
                                  std::mutex* collect_lock = nullptr);

}  // namespace meshplan::exec
