#include "simulator/simulate.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <unordered_map>

#include "core/cost/kernel_time.h"
#include "planner/comm_model.h"
#include "simulator/coalesce.h"
#include "simulator/event_queue.h"
#include "simulator/flow_network.h"
#include "simulator/rank_symmetry.h"
#include "simulator/replay_program.h"
#include "simulator/replay_view.h"
#include "simulator/shared_device.h"

namespace meshplan::sim {
namespace {

constexpr int kStreams = kReplayStreams;
constexpr int64_t kNone = kNoOp;

int64_t Pack(int32_t rank, int32_t op) {
  return (static_cast<int64_t>(rank) << 32) | static_cast<uint32_t>(op);
}
int32_t RankOf(int64_t packed) { return static_cast<int32_t>(packed >> 32); }
int32_t OpOf(int64_t packed) { return static_cast<int32_t>(packed & 0xFFFFFFFF); }

bool IsCollective(OpKind k) {
  return k == OpKind::kAllGather || k == OpKind::kReduceScatter || k == OpKind::kAllToAll;
}

// Messages from one peer to this rank, in order.
struct Inbox {
  int32_t peer = 0;
  std::vector<SimTime> arrival;  // per message; -1 until it arrived
  std::vector<int32_t> waiting;  // per message; the recv op waiting for it, or -1
  std::vector<int64_t> sender;   // per message; packed (rank, send op)
  int64_t next_recv = 0;
};

// A rank's replay form (ops, their states, dependents, streams) and what changes as it runs.
struct RankState : ReplayProgram {
  // Per stream, the op it runs next (or is running), or -1 once it has run all its ops: lets
  // Complete tell whether a released dependent heads its stream without reading its OpState.
  int32_t head_op[kStreams] = {-1, -1, -1, -1};
  bool busy[kStreams] = {false, false, false, false};
  std::vector<Inbox> inboxes;
  std::vector<std::pair<int32_t, int64_t>> sends_to;     // peer -> messages sent so far
  std::vector<std::pair<int32_t, int64_t>> collectives;  // group orbit -> collectives issued so far
  // The collective groups this rank is a member of (those of a representative, with symmetry).
  struct Membership {
    int32_t orbit = 0;  // the group's orbit under the symmetry (the group itself without one)
    int32_t group = 0;
    int32_t index = 0;  // position in the group's member list
    int32_t slot = 0;   // position among the ranks a collective of the orbit waits for
  };
  std::vector<Membership> memberships;
  int64_t remaining = 0;
  SimTime compute_busy = 0;
  double bytes_sent = 0;
};

// One collective call of a group, decomposed into point-to-point flows. With symmetry classes,
// one call of every group of an orbit at once, made by the representatives that are members of
// one of them (each stands for its class's members, which call at the same time).
struct Collective {
  OpKind kind = OpKind::kAllGather;
  int32_t orbit = 0;
  int32_t group_size = 0;  // members of each group (the same throughout an orbit)
  const std::vector<int32_t>* ranks = nullptr;  // per slot, the rank (a group's members in order)
  std::vector<int32_t> ops;  // per slot, the op index on that rank (-1 until arrived)
  int32_t arrived = 0;
  std::vector<int32_t> received, sent;
  // Ring collectives: per slot, the share of its steps' bytes its own NIC (or full-mesh link)
  // carries (1 unless the step leaves the node or crosses a full mesh:
  // planner::RingCollectiveSpreadOf); 0 until computed.
  std::vector<double> nic_share;
  // Ring collectives: per slot, whether its send is in flight, and the chunks it has received
  // but not forwarded yet (waiting for that send to end). A member forwards its chunks one at a
  // time in step order, as NCCL's ring does on a channel: a chunk never shares the member's port
  // with the next one, so a slower link downstream receives them paced rather than all at once.
  std::vector<uint8_t> sending;
  std::vector<int32_t> queued;
  int64_t last_arrival = kNone;
};

struct FlowOwner {
  bool collective = false;
  int32_t src_rank = 0, dst_rank = 0;
  int32_t send_op = 0;   // p2p
  int64_t message = 0;   // p2p: index in the receiver's inbox
  int32_t instance = 0;  // collective
  int32_t from = 0;      // collective: the sender's slot (dst_rank is the receiver)
  int32_t step = 0;      // collective ring step
};

struct PendingFlow {
  int64_t src_gpu = 0, dst_gpu = 0;
  double bytes = 0;
  FlowOwner owner;
};

class Replayer {
 public:
  // `origin` (may be null): `s` is the timing view of another schedule (coalesce.h); reports name
  // that schedule's ops.
  // `owned` (may be null): `s` itself, which the replay may empty rank by rank once it has read
  // it (Prepare), so that the schedule and the replay's state never both sit in memory whole.
  // `prepared` (may be null): the replay form of every rank's program, made beforehand
  // (ReplayViewSink); the replay takes them and does not read `s`'s programs.
  Replayer(const Schedule& s, const Topology& t, const std::vector<int64_t>& gpu, DType dtype,
           const SimOptions& o, const CoalescedSchedule* origin = nullptr,
           Schedule* owned = nullptr, std::vector<ReplayProgram>* prepared = nullptr)
      : s_(s),
        t_(t),
        gpu_(gpu),
        dtype_(dtype),
        options_(o),
        net_(t),
        owned_(owned),
        prepared_(prepared) {
    if (origin != nullptr) SetOrigins(&origin->begin, &origin->origin);
  }

  // `s` is the timing view of another schedule: reports name that schedule's ops, view op i of
  // rank r standing for (*origin)[r][(*begin)[r][i] .. (*begin)[r][i + 1]).
  void SetOrigins(const std::vector<std::vector<uint32_t>>* begin,
                  const std::vector<std::vector<uint32_t>>* origin) {
    begin_ = begin;
    origin_ = origin;
  }

  // Replays representatives only (rank_symmetry.h): the other ranks' programs are empty, each
  // does what its representative does, and a message to one of them is delivered to its
  // representative as coming from the sender's image in that frame.
  void SetSymmetry(const RankSymmetry* symmetry) { symmetry_ = symmetry; }

  // Op times of the schedule the timing view came from: a merged op's time is split over its
  // blocks in order, each taking its own kernel time (scaled to the merged op's, which it sums).
  std::vector<std::vector<OpTime>> OriginalOpTimes(
      const Schedule& original, const std::vector<std::vector<OpTime>>& merged) const {
    std::vector<std::vector<OpTime>> out(original.ranks.size());
    for (size_t r = 0; r < original.ranks.size(); ++r) {
      out[r].resize(original.ranks[r].ops.size());
      const auto& begin = (*begin_)[r];
      const auto& origin = (*origin_)[r];
      for (size_t i = 0; i < merged[r].size(); ++i) {
        const OpTime t = merged[r][i];
        const uint32_t b = begin[i], e = begin[i + 1];
        if (e - b == 1) {
          out[r][origin[b]] = t;
          continue;
        }
        double sum = 0;
        for (uint32_t k = b; k < e; ++k) sum += KernelNs(original.ranks[r].ops[origin[k]]);
        const double scale = sum > 0 ? static_cast<double>(t.end - t.start) / sum : 0.0;
        double at = 0;
        for (uint32_t k = b; k < e; ++k) {
          OpTime& o = out[r][origin[k]];
          o.start = t.start + static_cast<SimTime>(std::llround(at * scale));
          at += KernelNs(original.ranks[r].ops[origin[k]]);
          o.end = k + 1 == e ? t.end : t.start + static_cast<SimTime>(std::llround(at * scale));
        }
      }
    }
    return out;
  }

  Result<SimResult> Run() {
    MESHPLAN_RETURN_IF_ERROR(Prepare());
    for (int32_t r = 0; r < static_cast<int32_t>(ranks_.size()); ++r) {
      for (int st = 0; st < kStreams; ++st) TryStart(r, st, kNone);
    }
    int64_t total_ops = 0;  // of the schedule given to Simulate (the view's origins, when a view)
    for (size_t r = 0; r < ranks_.size(); ++r) {
      total_ops += origin_ == nullptr ? static_cast<int64_t>(ranks_[r].op.size())
                                      : static_cast<int64_t>((*origin_)[r].size());
    }
    while (!queue_.empty()) {
      const Event e = queue_.Pop();
      Prefetch();
      now_ = e.time;
      ++events_;
      if (options_.progress && events_ % kProgressEvents == 0)
        options_.progress(done_ops_, total_ops);
      switch (e.kind) {
        case EventKind::kOpDone:
          Complete(e.a, e.b);
          break;
        case EventKind::kSharedDone: {
          SharedDevice& device = devices_[DeviceOf(e.a)];
          if (device.epoch() != e.version) break;  // stale: the share changed since
          device.Finish(now_, e.a, e.b);
          Complete(e.a, e.b);
          RescheduleDevice(DeviceOf(e.a));
          break;
        }
        case EventKind::kFlowStart: {
          const PendingFlow& p = pending_[e.a];
          const int32_t id = net_.Add(now_, p.src_gpu, p.dst_gpu, p.bytes);
          if (static_cast<size_t>(id) >= owners_.size()) owners_.resize(id + 1);
          owners_[id] = p.owner;
          StartCopyOnDevice(id, p.src_gpu, p.dst_gpu);
          free_pending_.push_back(e.a);
          ScheduleChangedFlows();
          break;
        }
        case EventKind::kFlowDone: {
          if (!net_.active(e.a) || net_.version(e.a) != e.version) break;  // stale
          const FlowOwner owner = owners_[e.a];
          net_.Remove(now_, e.a);
          ScheduleChangedFlows();
          EndCopyOnDevice(e.a);
          FlowDone(owner);
          break;
        }
      }
    }
    return Finish();
  }

 private:
  Status Prepare() {
    const int64_t n = s_.num_ranks;
    if (static_cast<int64_t>(s_.ranks.size()) != n)
      return Status::Invalid("schedule has a program per rank missing");
    if (static_cast<int64_t>(gpu_.size()) != n) {
      return Status::Invalid("rank-to-GPU map has " + std::to_string(gpu_.size()) +
                             " entries for " + std::to_string(n) + " ranks");
    }
    if (n != t_.num_gpus()) {
      return Status::Invalid("schedule has " + std::to_string(n) + " ranks but " + t_.source +
                             " has " + std::to_string(t_.num_gpus()) + " GPUs");
    }
    MESHPLAN_RETURN_IF_ERROR(t_.SupportsDType(dtype_));
    block_tokens_ = s_.layout.num_shards > 0 ? s_.layout.KernelBlockTokens() : 1;
    // UnsharedKernelSeconds(flops) = flops / rate + launch overhead, as nanoseconds per FLOP +
    // constant; a backward kernel runs at BackwardRateRatio of the forward's rate, and a block
    // the mask cuts does cut_row_extra_pairs more pairs per cut row (Op::cut_rows_per_pair).
    // Every kernel of a plan covers the same heads (SimOptions::kernel_batch_heads).
    const KernelShape shape = s_.layout.num_shards > 0
                                  ? MakeKernelShape(t_.gpu, s_.layout, options_.kernel_batch_heads,
                                                    options_.mask_kind, s_.kernel_calls)
                                  : KernelShape{block_tokens_, options_.kernel_batch_heads};
    const double rate = AttentionFlopsPerSecond(t_.gpu, dtype_, options_.head_dim, shape);
    ns_per_flop_ = rate > 0 ? kNanosecondsPerSecond / rate : 0.0;
    ns_per_backward_flop_ = ns_per_flop_ / BackwardRateRatio(t_.gpu, shape);
    cut_row_extra_pairs_ = CutRowExtraPairs(t_.gpu, s_.layout);
    ranks_per_device_ = t_.gpu.ranks_per_device;
    if (ranks_per_device_ > 1) {
      copies_take_compute_ = t_.gpu.copies_take_compute;
      devices_.assign(static_cast<size_t>(t_.num_gpus() / ranks_per_device_),
                      SharedDevice(t_.gpu.concurrent_kernels, t_.gpu.sharing));
    }
    launch_ns_ = t_.gpu.launch_overhead_s * kNanosecondsPerSecond;
    if (prepared_ != nullptr && static_cast<int64_t>(prepared_->size()) != n) {
      return Status::Invalid("replay form has a program per rank missing");
    }
    ranks_.resize(n);
    for (int64_t r = 0; r < n; ++r) {
      RankState& st = ranks_[r];
      if (prepared_ != nullptr) {
        static_cast<ReplayProgram&>(st) = std::move((*prepared_)[r]);
      } else {
        MESHPLAN_ASSIGN_OR_RETURN(auto replay, MakeReplayProgram(s_.ranks[r], r, n));
        static_cast<ReplayProgram&>(st) = std::move(replay);
        if (owned_ != nullptr) owned_->ranks[r] = RankProgram{};  // read for the last time
      }
      st.remaining = static_cast<int64_t>(st.op.size());
      for (int stream = 0; stream < kStreams; ++stream)
        st.head_op[stream] = st.stream_first[stream];
      for (size_t i = 0; i < st.ops.size(); ++i) {
        const ReplayOp& op = st.ops[i];
        if (IsCollective(op.kind) &&
            (op.peer_or_group < 0 || op.peer_or_group >= static_cast<int32_t>(s_.groups.size()))) {
          return Status::Invalid("rank " + std::to_string(r) + " op " + std::to_string(i) +
                                 ": group out of range");
        }
      }
    }
    level_bytes_.assign(static_cast<size_t>(t_.num_levels()), 0.0);
    if (symmetry_ != nullptr) {
      if (symmetry_->num_ranks() != n)
        return Status::Invalid("symmetry classes cover another rank count");
      for (int64_t r = 0; r < n; ++r) {
        if (!symmetry_->IsRepresentative(r) && !ranks_[r].op.empty()) {
          return Status::Invalid("rank " + std::to_string(r) +
                                 " is not a representative but has a program");
        }
      }
      // The generators as GPU permutations, for the network's link orbits.
      std::vector<std::vector<int64_t>> maps;
      for (int d : symmetry_->Generators()) {
        std::vector<int64_t> image(static_cast<size_t>(n));
        for (int64_t r = 0; r < n; ++r)
          image[static_cast<size_t>(gpu_[r])] = gpu_[symmetry_->Apply(d, r)];
        maps.push_back(std::move(image));
      }
      MESHPLAN_RETURN_IF_ERROR(net_.UseSymmetry(maps, symmetry_->ClassSize()));
    }
    return PrepareGroups();
  }

  // Orbits of the collective groups (each group its own without symmetry) and, per orbit, the
  // ranks its collectives wait for: a group's members in order; with symmetry, the
  // representatives that are members of a group of the orbit.
  Status PrepareGroups() {
    const size_t groups = s_.groups.size();
    std::vector<int32_t> orbit(groups);
    int32_t orbits = static_cast<int32_t>(groups);
    if (symmetry_ != nullptr) {
      MESHPLAN_ASSIGN_OR_RETURN(auto mapped, MapGroups(*symmetry_, s_.groups));
      orbit = std::move(mapped.orbit);
      orbits = mapped.count;
    } else {
      for (size_t g = 0; g < groups; ++g) orbit[g] = static_cast<int32_t>(g);
    }
    orbit_of_group_ = orbit;
    orbit_size_.assign(static_cast<size_t>(orbits), -1);
    if (symmetry_ == nullptr) {
      orbit_ranks_ = &s_.groups;
    } else {
      orbit_ranks_storage_.assign(static_cast<size_t>(orbits), {});
      orbit_ranks_ = &orbit_ranks_storage_;
    }
    for (size_t g = 0; g < groups; ++g) {
      const std::vector<int32_t>& members = s_.groups[g];
      const int32_t o = orbit[g];
      if (orbit_size_[static_cast<size_t>(o)] >= 0 &&
          orbit_size_[static_cast<size_t>(o)] != static_cast<int32_t>(members.size())) {
        return Status::Invalid("groups of one orbit differ in size");
      }
      orbit_size_[static_cast<size_t>(o)] = static_cast<int32_t>(members.size());
      for (size_t k = 0; k < members.size(); ++k) {
        const int32_t r = members[k];
        if (r < 0 || r >= static_cast<int32_t>(ranks_.size()))
          return Status::Invalid("group " + std::to_string(g) + " names no rank");
        if (symmetry_ != nullptr && !symmetry_->IsRepresentative(r)) continue;
        int32_t slot = static_cast<int32_t>(k);
        if (symmetry_ != nullptr) {
          slot = static_cast<int32_t>(orbit_ranks_storage_[static_cast<size_t>(o)].size());
          orbit_ranks_storage_[static_cast<size_t>(o)].push_back(r);
        }
        ranks_[static_cast<size_t>(r)].memberships.push_back(
            {o, static_cast<int32_t>(g), static_cast<int32_t>(k), slot});
      }
    }
    return Status::Ok();
  }

  // Rank r's membership of a group of `orbit`, or null.
  const RankState::Membership* MembershipOf(int32_t r, int32_t orbit) const {
    for (const RankState::Membership& m : ranks_[static_cast<size_t>(r)].memberships) {
      if (m.orbit == orbit) return &m;
    }
    return nullptr;
  }

  // Flows, and bytes, that one started flow stands for (its images under the symmetry).
  double Images() const {
    return symmetry_ == nullptr ? 1.0 : static_cast<double>(symmetry_->ClassSize());
  }

  // Starts loading the state the next op completions will touch while this event is handled, in
  // two stages: for the event after next, its op's state and the start of its dependents list;
  // for the next event (whose list was requested one event ago, as the event after next), the
  // dependents' counters. Hints only: no result depends on them.
  void Prefetch() const {
    if (queue_.empty()) return;
    const Event& next = queue_.Top();
    if (next.kind == EventKind::kOpDone) {
      const RankState& st = ranks_[next.a];
      const int32_t begin = st.dependents_begin[next.b];
      const int32_t end = std::min(st.dependents_begin[next.b + 1], begin + kPrefetchDependents);
      for (int32_t k = begin; k < end; ++k) __builtin_prefetch(&st.waits[st.dependents[k]]);
    }
    const Event* after = queue_.Second();
    if (after == nullptr || after->kind != EventKind::kOpDone) return;
    const RankState& st = ranks_[after->a];
    __builtin_prefetch(&st.op[after->b]);
    __builtin_prefetch(&st.ops[after->b]);
    __builtin_prefetch(&st.waits[after->b]);
    __builtin_prefetch(&st.dependents_begin[after->b]);
    // An op with no dependents may begin at dependents.size(): no element to prefetch there.
    const size_t first_dependent = static_cast<size_t>(st.dependents_begin[after->b]);
    if (first_dependent < st.dependents.size())
      __builtin_prefetch(st.dependents.data() + first_dependent);
  }
  static constexpr int32_t kPrefetchDependents = 16;

  void ScheduleChangedFlows() {
    for (int32_t id : net_.TakeChanged()) {
      if (net_.active(id))
        queue_.Push(net_.FinishTime(id, now_), EventKind::kFlowDone, id, 0, net_.version(id));
    }
  }

  // Whether op i of `st` still waits for a dep (DepCount: the exact count when it is large).
  static bool Waits(const RankState& st, int32_t i) {
    const DepCount w = st.waits[i];
    return w == kManyDeps ? st.op[i].deps_left > 0 : w > 0;
  }

  // Counts one more of op i's deps complete; true when it was the last.
  static bool ReleaseDep(RankState& st, int32_t i) {
    DepCount& w = st.waits[i];
    if (w != kManyDeps) return --w == 0;
    return --st.op[i].deps_left == 0;
  }

  void TryStart(int32_t r, int stream, int64_t cause) {
    RankState& st = ranks_[r];
    const int32_t op = st.head_op[stream];
    if (st.busy[stream] || op < 0) return;
    if (Waits(st, op)) return;
    Start(r, op, cause);
  }

  void Start(int32_t r, int32_t i, int64_t cause) {
    RankState& st = ranks_[r];
    const ReplayOp& op = st.ops[i];
    st.busy[static_cast<int>(op.stream())] = true;
    st.op[i].start = now_;
    st.op[i].cause = cause;
    switch (op.kind) {
      case OpKind::kCompute:
      case OpKind::kMerge:
        StartKernel(r, i, KernelNs(st, i));
        break;
      case OpKind::kSend:
        StartSend(r, i, op);
        break;
      case OpKind::kRecv:
        StartRecv(r, i, op);
        break;
      default:
        ArriveAtCollective(r, i, op);
        break;
    }
  }

  // A compute-stream op of `ns` alone on its device: on a device of its own it ends after `ns`
  // (FromSeconds rounding); on a shared one the device divides itself among its kernels.
  // UnsharedKernelSeconds (core/cost/kernel_time.h) of a compute op in nanoseconds, with the rate
  // precomputed (every block of a schedule has the layout's block size); an op standing for
  // several kernels (coalesce.h) pays the launch overhead of each.
  // A ring step's compute op also merges its partials (Op::bytes, RingStepPartialSeconds), those
  // of a strict causal diagonal through a slice (Op::sliced_bytes, SlicedMergeSeconds).
  double KernelNs(const Op& op) const {
    return op.flops * (op.phase == Phase::kBackward ? ns_per_backward_flop_ : ns_per_flop_) *
               (1.0 + op.cut_rows_per_pair * cut_row_extra_pairs_) +
           launch_ns_ * op.kernels +
           PartialNs(static_cast<double>(op.bytes), static_cast<double>(op.sliced_bytes));
  }
  double PartialNs(double bytes, double sliced_bytes) const {
    if (!(bytes > 0)) return 0.0;
    return (RingStepPartialSeconds(t_.gpu, bytes) + SlicedMergeSeconds(t_.gpu, sliced_bytes)) *
           kNanosecondsPerSecond;
  }
  // The same for a replay op (replay_program.h): the same expression, so the same bits. A merge
  // is PartialMergeSeconds of its value, the partial's bytes.
  double KernelNs(const ReplayProgram& program, int32_t i) const {
    const ReplayOp& op = program.ops[static_cast<size_t>(i)];
    if (op.kind == OpKind::kMerge)
      return PartialMergeSeconds(t_.gpu, op.value) * kNanosecondsPerSecond;
    const double partial_bytes =
        program.partial_bytes.empty() ? 0.0 : program.partial_bytes[static_cast<size_t>(i)];
    const double sliced_bytes =
        program.sliced_bytes.empty() ? 0.0 : program.sliced_bytes[static_cast<size_t>(i)];
    return op.value * (op.phase() == Phase::kBackward ? ns_per_backward_flop_ : ns_per_flop_) *
               (1.0 + op.cut_rows_per_pair() * cut_row_extra_pairs_) +
           launch_ns_ * op.kernels + PartialNs(partial_bytes, sliced_bytes);
  }

  void StartKernel(int32_t r, int32_t i, double ns) {
    if (ranks_per_device_ <= 1) {
      queue_.Push(EndTime(now_, ns), EventKind::kOpDone, r, i);
      return;
    }
    const int64_t device = DeviceOf(r);
    devices_[device].Start(now_, r, i, ns);
    RescheduleDevice(device);
  }

  int64_t DeviceOf(int32_t r) const { return gpu_[r] / ranks_per_device_; }

  // A flow between two rank slots of one device whose processors make its copies
  // (GpuSpec::copies_take_compute) runs on that device while it moves: flow `id` is counted
  // there from its start to its end.
  void StartCopyOnDevice(int32_t id, int64_t src_gpu, int64_t dst_gpu) {
    if (!copies_take_compute_) return;
    if (static_cast<size_t>(id) >= copy_device_.size()) copy_device_.resize(id + 1, -1);
    copy_device_[id] = -1;
    const int64_t device = src_gpu / ranks_per_device_;
    if (src_gpu == dst_gpu || device != dst_gpu / ranks_per_device_) return;
    copy_device_[id] = device;
    devices_[device].StartCopy(now_);
    RescheduleDevice(device);
  }
  void EndCopyOnDevice(int32_t id) {
    if (!copies_take_compute_ || static_cast<size_t>(id) >= copy_device_.size() ||
        copy_device_[id] < 0)
      return;
    const int64_t device = copy_device_[id];
    copy_device_[id] = -1;
    devices_[device].EndCopy(now_);
    RescheduleDevice(device);
  }

  void RescheduleDevice(int64_t device) {
    SharedDevice& d = devices_[device];
    d.Reschedule(now_, [&](int32_t rank, int32_t op, SimTime end) {
      queue_.Push(end, EventKind::kSharedDone, rank, op, d.epoch());
    });
  }

  void Complete(int32_t r, int32_t i) {
    RankState& st = ranks_[r];
    OpState& self_state = st.op[i];
    self_state.end = now_;
    --st.remaining;
    // In a timing view every op's `kernels` counts the original ops it stands for (coalesce.cc
    // sets 1 on every op it copies and adds 1 per merged block), so no look-up of its origins.
    done_ops_ += origin_ == nullptr ? 1 : st.ops[i].kernels;
    const int stream = static_cast<int>(st.ops[i].stream());
    if (stream == static_cast<int>(StreamId::kCompute)) st.compute_busy += now_ - self_state.start;
    st.busy[stream] = false;
    st.head_op[stream] = self_state.next_on_stream;
    const int64_t self = Pack(r, i);
    // A dependent starts when this was its last dep and it heads its stream, which is idle: the
    // same test and order as before, with the dependent's stream found among the (at most 4)
    // stream heads instead of in its OpState.
    for (int32_t k = st.dependents_begin[i]; k < st.dependents_begin[i + 1]; ++k) {
      const int32_t d = st.dependents[k];
      if (!ReleaseDep(st, d)) continue;
      for (int s = 0; s < kStreams; ++s) {
        if (st.head_op[s] == d) {
          if (!st.busy[s]) Start(r, d, self);
          break;
        }
      }
    }
    TryStart(r, stream, self);
  }

  Inbox& InboxOf(int32_t r, int32_t peer) {
    for (Inbox& in : ranks_[r].inboxes) {
      if (in.peer == peer) return in;
    }
    ranks_[r].inboxes.push_back(Inbox{peer, {}, {}, {}, 0});
    return ranks_[r].inboxes.back();
  }

  static int64_t NextIndex(std::vector<std::pair<int32_t, int64_t>>& counters, int32_t key) {
    for (auto& [k, n] : counters) {
      if (k == key) return n++;
    }
    counters.emplace_back(key, 1);
    return 0;
  }

  void LaunchFlow(int64_t src_gpu, int64_t dst_gpu, double bytes, const FlowOwner& owner) {
    int level = t_.LevelOf(src_gpu, dst_gpu);
    if (level < 0) level = 0;
    level_bytes_[level] += bytes * Images();
    flows_ += symmetry_ == nullptr ? 1 : symmetry_->ClassSize();
    int32_t slot;
    if (!free_pending_.empty()) {
      slot = free_pending_.back();
      free_pending_.pop_back();
    } else {
      slot = static_cast<int32_t>(pending_.size());
      pending_.emplace_back();
    }
    pending_[slot] = PendingFlow{src_gpu, dst_gpu, bytes, owner};
    queue_.Push(now_ + FromSeconds(t_.RouteLatencySeconds(level, src_gpu, dst_gpu)),
                EventKind::kFlowStart, slot);
  }

  void StartSend(int32_t r, int32_t i, const ReplayOp& op) {
    const int32_t dst = op.peer_or_group;
    FlowOwner owner;
    owner.src_rank = r;
    owner.dst_rank = dst;
    owner.send_op = i;
    owner.message = NextIndex(ranks_[r].sends_to, dst);
    ranks_[r].bytes_sent += op.value;
    if (gpu_[r] == gpu_[dst]) {  // same GPU: a local copy, delivered at once
      Deliver(owner);
      queue_.Push(now_, EventKind::kOpDone, r, i);
      return;
    }
    LaunchFlow(gpu_[r], gpu_[dst], op.value, owner);
  }

  void StartRecv(int32_t r, int32_t i, const ReplayOp& op) {
    Inbox& in = InboxOf(r, op.peer_or_group);
    const int64_t k = in.next_recv++;
    if (static_cast<int64_t>(in.arrival.size()) <= k) {
      in.arrival.resize(k + 1, -1);
      in.waiting.resize(k + 1, -1);
      in.sender.resize(k + 1, kNone);
    }
    if (in.arrival[k] >= 0) {
      queue_.Push(now_, EventKind::kOpDone, r, i);  // data already here
    } else {
      in.waiting[k] = i;
    }
  }

  // The message `owner` describes has arrived at its receiver (with symmetry classes: at the
  // receiver's representative, from the sender's image in its frame).
  void Deliver(const FlowOwner& owner) {
    if (symmetry_ != nullptr && !symmetry_->IsRepresentative(owner.dst_rank)) {
      FlowOwner moved = owner;
      moved.dst_rank = static_cast<int32_t>(symmetry_->Representative(owner.dst_rank));
      const int32_t seen_from =
          static_cast<int32_t>(symmetry_->InFrameOf(owner.dst_rank, owner.src_rank));
      Inbox& in = InboxOf(moved.dst_rank, seen_from);
      Arrive(in, moved);
      return;
    }
    Arrive(InboxOf(owner.dst_rank, owner.src_rank), owner);
  }

  void Arrive(Inbox& in, const FlowOwner& owner) {
    const int64_t k = owner.message;
    if (static_cast<int64_t>(in.arrival.size()) <= k) {
      in.arrival.resize(k + 1, -1);
      in.waiting.resize(k + 1, -1);
      in.sender.resize(k + 1, kNone);
    }
    in.arrival[k] = now_;
    in.sender[k] = Pack(owner.src_rank, owner.send_op);
    if (in.waiting[k] >= 0) {
      const int32_t recv = in.waiting[k];
      in.waiting[k] = -1;
      ranks_[owner.dst_rank].op[recv].cause = in.sender[k];
      Complete(owner.dst_rank, recv);
    }
  }

  void ArriveAtCollective(int32_t r, int32_t i, const ReplayOp& op) {
    const int32_t group = op.peer_or_group;
    const int32_t orbit = orbit_of_group_[static_cast<size_t>(group)];
    const RankState::Membership* member = MembershipOf(r, orbit);
    if (member == nullptr || member->group != group) {
      error_ = "rank " + std::to_string(r) + " op " + std::to_string(i) +
               " is not a member of its collective's group";
      return;
    }
    const int64_t seq = NextIndex(ranks_[r].collectives, orbit);
    const int64_t key = (static_cast<int64_t>(orbit) << 32) | seq;
    const std::vector<int32_t>& waits_for = (*orbit_ranks_)[static_cast<size_t>(orbit)];
    auto it = open_collectives_.find(key);
    int32_t id;
    if (it == open_collectives_.end()) {
      id = static_cast<int32_t>(collectives_.size());
      collectives_.emplace_back();
      Collective& c = collectives_.back();
      c.kind = op.kind;
      c.orbit = orbit;
      c.group_size = orbit_size_[static_cast<size_t>(orbit)];
      c.ranks = &waits_for;
      c.ops.assign(waits_for.size(), -1);
      c.received.assign(waits_for.size(), 0);
      c.sent.assign(waits_for.size(), 0);
      c.nic_share.assign(waits_for.size(), 0.0);
      c.sending.assign(waits_for.size(), 0);
      c.queued.assign(waits_for.size(), 0);
      open_collectives_.emplace(key, id);
    } else {
      id = it->second;
    }
    Collective& c = collectives_[id];
    c.ops[member->slot] = i;
    ++c.arrived;
    c.last_arrival = Pack(r, i);
    ranks_[r].bytes_sent += op.value;
    if (c.arrived == static_cast<int32_t>(waits_for.size())) {
      open_collectives_.erase(key);
      LaunchCollective(id);
    }
  }

  // Ring collectives: p-1 steps, member m sends to m+1 and forwards each chunk once it has it.
  // All-to-all: every member sends its share to every other member at once.
  void LaunchCollective(int32_t id) {
    Collective& c = collectives_[id];
    const int32_t p = c.group_size;
    const int32_t slots = static_cast<int32_t>(c.ops.size());
    if (p <= 1) {
      for (int32_t m = 0; m < slots; ++m) CompleteMember(id, m);
      return;
    }
    for (int32_t m = 0; m < slots; ++m) {
      const int32_t rank = (*c.ranks)[static_cast<size_t>(m)];
      const RankState::Membership& member = *MembershipOf(rank, c.orbit);
      const std::vector<int32_t>& members = s_.groups[static_cast<size_t>(member.group)];
      const ReplayOp& op = ranks_[rank].ops[c.ops[m]];
      const double chunk = op.value / static_cast<double>(p - 1);
      if (c.kind == OpKind::kAllToAll) {
        for (int32_t to = 0; to < p; ++to) {
          if (to != member.index) SendChunk(id, m, members[static_cast<size_t>(to)], 0, chunk);
        }
      } else {
        SendChunk(id, m, members[static_cast<size_t>((member.index + 1) % p)], 0, chunk);
      }
    }
  }

  void SendChunk(int32_t id, int32_t from, int32_t to_rank, int32_t step, double bytes) {
    FlowOwner owner;
    owner.collective = true;
    owner.instance = id;
    owner.from = from;
    owner.step = step;
    owner.src_rank = (*collectives_[id].ranks)[static_cast<size_t>(from)];
    owner.dst_rank = to_rank;
    if (gpu_[owner.src_rank] == gpu_[to_rank]) {
      ChunkArrived(owner, bytes);
      return;
    }
    const double share =
        collectives_[id].kind == OpKind::kAllToAll ? 1.0 : NicShare(id, from, to_rank);
    if (collectives_[id].kind != OpKind::kAllToAll) collectives_[id].sending[from] = 1;
    LaunchFlow(gpu_[owner.src_rank], gpu_[to_rank], bytes * share, owner);
  }

  // A ring collective's member at `slot` forwards the chunk of `step` to its successor now, or
  // once its send in flight has ended (Collective::queued).
  void ForwardChunk(int32_t id, int32_t slot, int32_t step, double bytes) {
    Collective& c = collectives_[id];
    if (c.sending[slot]) {
      ++c.queued[slot];
      return;
    }
    const int32_t rank = (*c.ranks)[static_cast<size_t>(slot)];
    const RankState::Membership& member = *MembershipOf(rank, c.orbit);
    const std::vector<int32_t>& members = s_.groups[static_cast<size_t>(member.group)];
    SendChunk(id, slot, members[static_cast<size_t>((member.index + 1) % c.group_size)], step,
              bytes);
  }

  // The share of a ring collective step from slot `from` to `to_rank` that the sender's NIC
  // carries (comm_model.h RingCollectiveSpreadOf): 1 / the group's members in the sender's
  // unit when the step leaves it over a NIC level, 1 / the other members in its full-mesh group
  // on a full mesh (the link to the successor is one of theirs), else 1. The flow carries that
  // many bytes; the chunk forwarded on arrival is the whole one.
  double NicShare(int32_t id, int32_t from, int32_t to_rank) {
    Collective& c = collectives_[id];
    double& share = c.nic_share[static_cast<size_t>(from)];
    if (share > 0) return share;
    const int32_t rank = (*c.ranks)[static_cast<size_t>(from)];
    const int64_t src = gpu_[rank];
    const planner::RingCollectiveSpread spread =
        planner::RingCollectiveSpreadOf(t_, src, gpu_[to_rank]);
    share = 1.0;
    if (spread.span > 0) {
      const int64_t span = spread.span;
      const RankState::Membership& member = *MembershipOf(rank, c.orbit);
      int64_t same_unit = 0;
      for (int32_t m : s_.groups[static_cast<size_t>(member.group)])
        same_unit += gpu_[m] / span == src / span ? 1 : 0;
      share = planner::RingCollectiveStepShare(spread, same_unit);
    }
    return share;
  }

  // A chunk reached its receiver (with symmetry classes: the receiver's representative, which
  // receives the image of the chunk in its own group).
  void ChunkArrived(const FlowOwner& owner, double bytes) {
    Collective& c = collectives_[owner.instance];
    const int32_t p = c.group_size;
    const int32_t receiver = symmetry_ == nullptr
                                 ? owner.dst_rank
                                 : static_cast<int32_t>(symmetry_->Representative(owner.dst_rank));
    const RankState::Membership& member = *MembershipOf(receiver, c.orbit);
    ++c.sent[owner.from];
    ++c.received[member.slot];
    if (c.kind != OpKind::kAllToAll && owner.step + 1 < p - 1)
      ForwardChunk(owner.instance, member.slot, owner.step + 1, bytes);
    for (int32_t m : {owner.from, member.slot}) {
      if (c.sent[m] == p - 1 && c.received[m] == p - 1) CompleteMember(owner.instance, m);
    }
  }

  void CompleteMember(int32_t id, int32_t m) {
    Collective& c = collectives_[id];
    const int32_t rank = (*c.ranks)[static_cast<size_t>(m)];
    // The member that arrived last waited for no one: its end follows from its own start.
    if (c.last_arrival != Pack(rank, c.ops[m])) ranks_[rank].op[c.ops[m]].cause = c.last_arrival;
    c.sent[m] = -1;  // completed once
    Complete(rank, c.ops[m]);
  }

  void FlowDone(const FlowOwner& owner) {
    if (owner.collective) {
      Collective& c = collectives_[owner.instance];
      const ReplayOp& op = ranks_[owner.src_rank].ops[c.ops[owner.from]];
      const double chunk = op.value / static_cast<double>(c.group_size - 1);
      if (c.kind != OpKind::kAllToAll) {
        // The sender's port is free: its next chunk in step order goes now.
        c.sending[owner.from] = 0;
        if (c.queued[owner.from] > 0) {
          --c.queued[owner.from];
          ForwardChunk(owner.instance, owner.from, owner.step + 1, chunk);
        }
      }
      ChunkArrived(owner, chunk);
      return;
    }
    Complete(owner.src_rank, owner.send_op);
    Deliver(owner);
  }

  Result<SimResult> Finish() {
    if (!error_.empty()) return Status::Invalid(error_);
    SimResult out;
    out.events = events_;
    out.flows = flows_;
    SimTime total = 0;
    std::vector<SimTime> last(ranks_.size(), 0);
    bool stuck = false;
    std::string stuck_text;
    int stuck_ranks = 0;
    for (size_t r = 0; r < ranks_.size(); ++r) {
      const RankState& st = ranks_[r];
      for (const OpState& o : st.op) last[r] = std::max(last[r], o.end);
      if (symmetry_ != nullptr)
        last[r] = last[static_cast<size_t>(symmetry_->Representative(static_cast<int64_t>(r)))];
      total = std::max(total, last[r]);
      if (st.remaining > 0) {
        stuck = true;
        if (stuck_ranks++ < 3) stuck_text += DescribeStuck(static_cast<int32_t>(r));
      }
    }
    if (stuck) return Status::Invalid("schedule deadlocks in the simulator:" + stuck_text);
    if (total >= kSimHorizon) {
      return Status::Invalid("the replay runs past the simulator's horizon of 2^62 ns (146 years)");
    }
    out.total_s = ToSeconds(total);
    out.ranks.resize(ranks_.size());
    for (size_t r = 0; r < ranks_.size(); ++r) {
      // A rank outside the representatives does what its representative does.
      const size_t from =
          symmetry_ == nullptr
              ? r
              : static_cast<size_t>(symmetry_->Representative(static_cast<int64_t>(r)));
      RankStats& rs = out.ranks[r];
      rs.compute_s = ToSeconds(ranks_[from].compute_busy);
      rs.exposed_comm_s = ToSeconds(last[r]) - rs.compute_s;
      rs.idle_s = out.total_s - ToSeconds(last[r]);
      rs.bytes_sent = ranks_[from].bytes_sent;
    }
    for (int l = 0; l < t_.num_levels(); ++l) {
      LevelStats ls;
      ls.name = t_.levels[l].name;
      ls.bytes = level_bytes_[l];
      double ports_bytes_per_s = 0;  // every GPU's port at the level (fabrics may differ)
      if (t_.levels[l].fabrics.empty() && !t_.IsFullMesh(l)) {
        ports_bytes_per_s = static_cast<double>(t_.num_gpus()) * t_.levels[l].bandwidth_bytes_per_s;
      } else {
        for (int64_t g = 0; g < t_.num_gpus(); ++g) ports_bytes_per_s += t_.PortBandwidth(l, g);
      }
      const double capacity = ports_bytes_per_s * out.total_s;
      ls.utilization = capacity > 0 ? ls.bytes / capacity : 0.0;
      const FlowNetwork::LinkLoad busiest = net_.BusiestRouteLink(l);
      if (busiest.bytes > 0) {
        ls.busiest_link = busiest.name;
        ls.busiest_link_bytes = busiest.bytes;
        ls.busiest_link_utilization =
            out.total_s > 0 ? busiest.bytes / (busiest.bytes_per_s * out.total_s) : 0.0;
      }
      out.levels.push_back(ls);
    }
    out.critical_path = CriticalPath(total);
    if (options_.record_op_times) {
      out.op_times.resize(ranks_.size());
      for (size_t r = 0; r < ranks_.size(); ++r) {
        auto& times = out.op_times[r];
        times.resize(ranks_[r].op.size());
        for (size_t i = 0; i < times.size(); ++i)
          times[i] = {ranks_[r].op[i].start, ranks_[r].op[i].end};
      }
    }
    return out;
  }

  std::string DescribeStuck(int32_t r) const {
    const RankState& st = ranks_[r];
    std::string text = " rank " + std::to_string(r) + ":";
    for (int stream = 0; stream < kStreams; ++stream) {
      const int32_t i = st.head_op[stream];
      if (i < 0) continue;
      const ReplayOp& op = st.ops[i];
      const int64_t number = origin_ == nullptr ? i : (*origin_)[r][(*begin_)[r][i]];
      text += " op " + std::to_string(number) + " (" + std::string(OpKindName(op.kind)) + " on " +
              std::string(StreamName(op.stream())) + ")";
      if (Waits(st, i)) {
        const DepCount w = st.waits[i];
        text += " waits for " + std::to_string(w == kManyDeps ? st.op[i].deps_left : w) + " deps;";
      } else if (op.kind == OpKind::kRecv) {
        text += " waits for a message from rank " + std::to_string(op.peer_or_group) + ";";
      } else if (IsCollective(op.kind)) {
        text += " waits for group " + std::to_string(op.peer_or_group) + ";";
      } else {
        text += " running;";
      }
    }
    return text;
  }

  // Follows, from the op that ends last, the chain of ops whose completion set each op's end.
  std::string CriticalPath(SimTime total) const {
    int64_t cur = kNone;
    for (size_t r = 0; r < ranks_.size() && cur == kNone; ++r) {
      for (size_t i = 0; i < ranks_[r].op.size(); ++i) {
        if (ranks_[r].op[i].end == total) {
          cur = Pack(static_cast<int32_t>(r), static_cast<int32_t>(i));
          break;
        }
      }
    }
    if (cur == kNone) return "empty schedule";
    const int64_t last = cur;
    double compute_s = 0, merge_s = 0, collective_s = 0;
    int64_t computes = 0, merges = 0, collectives = 0, ops = 0;
    std::vector<double> p2p_s(static_cast<size_t>(t_.num_levels()), 0.0);
    std::vector<int64_t> p2p(static_cast<size_t>(t_.num_levels()), 0);
    int64_t first = cur;
    int64_t total_ops = 0;
    for (const RankState& st : ranks_) total_ops += static_cast<int64_t>(st.op.size());
    // Causes point to ops that ended no later; the bound only guards against a malformed chain.
    while (cur != kNone && ops <= total_ops) {
      const int32_t r = RankOf(cur), i = OpOf(cur);
      const ReplayOp& op = ranks_[r].ops[i];
      // Each op on the path is charged from its cause's end to its own end, so the charges
      // partition the total time (a recv whose data arrived as its send finished costs 0).
      const int64_t cause = ranks_[r].op[i].cause;
      const SimTime from = cause == kNone ? 0 : ranks_[RankOf(cause)].op[OpOf(cause)].end;
      const double d = ToSeconds(ranks_[r].op[i].end - from);
      ++ops;
      ops += op.kernels - 1;  // the blocks of a merged op were ops of the path one after another
      if (op.kind == OpKind::kCompute) {
        compute_s += d;
        computes += op.kernels;
      } else if (op.kind == OpKind::kMerge) {
        merge_s += d;
        ++merges;
      } else if (IsCollective(op.kind)) {
        collective_s += d;
        ++collectives;
      } else {
        const int level = std::max(0, t_.LevelOf(gpu_[r], gpu_[op.peer_or_group]));
        p2p_s[level] += d;
        ++p2p[level];
      }
      first = cur;
      cur = ranks_[r].op[i].cause;
    }
    // Op numbers of the schedule given to Simulate: a merged op's first block starts the path,
    // its last block ends it.
    auto original = [&](int64_t packed, bool last_block) -> int64_t {
      if (origin_ == nullptr) return OpOf(packed);
      const int32_t r = RankOf(packed), i = OpOf(packed);
      const auto& begin = (*begin_)[static_cast<size_t>(r)];
      return (*origin_)[static_cast<size_t>(r)][last_block ? begin[i + 1] - 1 : begin[i]];
    };
    auto describe = [&](int64_t packed, bool last_block) {
      const ReplayOp& op = ranks_[RankOf(packed)].ops[OpOf(packed)];
      return "rank " + std::to_string(RankOf(packed)) + " op " +
             std::to_string(original(packed, last_block)) + " (" +
             std::string(op.phase() == Phase::kForward ? "fwd " : "bwd ") +
             std::string(OpKindName(op.kind)) + ")";
    };
    char buffer[128];
    std::string text = std::to_string(ops) + " ops from " + describe(first, false) + " to " +
                       describe(last, true) + ": ";
    std::snprintf(buffer, sizeof buffer, "compute %.3f ms (%lld blocks)", compute_s * 1e3,
                  static_cast<long long>(computes));
    text += buffer;
    if (merges > 0) {
      std::snprintf(buffer, sizeof buffer, ", merges %.3f ms (%lld)", merge_s * 1e3,
                    static_cast<long long>(merges));
      text += buffer;
    }
    for (int l = 0; l < t_.num_levels(); ++l) {
      if (p2p[l] == 0) continue;
      // The level's name is the cluster file's (any length): only the numbers go through the
      // fixed buffer.
      std::snprintf(buffer, sizeof buffer, " %.3f ms (%lld)", p2p_s[l] * 1e3,
                    static_cast<long long>(p2p[l]));
      text += ", transfers over " + t_.levels[l].name + buffer;
    }
    if (collectives > 0) {
      std::snprintf(buffer, sizeof buffer, ", collectives %.3f ms (%lld)", collective_s * 1e3,
                    static_cast<long long>(collectives));
      text += buffer;
    }
    return text;
  }

  const Schedule& s_;
  const Topology& t_;
  const std::vector<int64_t>& gpu_;
  DType dtype_;
  SimOptions options_;
  FlowNetwork net_;
  const std::vector<std::vector<uint32_t>>* begin_ = nullptr;  // null unless a view (SetOrigins)
  const std::vector<std::vector<uint32_t>>* origin_ = nullptr;
  const RankSymmetry* symmetry_ = nullptr;  // null: every rank replayed
  Schedule* owned_ = nullptr;
  std::vector<ReplayProgram>* prepared_ = nullptr;
  EventQueue queue_;
  SimTime now_ = 0;
  int64_t events_ = 0, flows_ = 0, done_ops_ = 0;
  int64_t block_tokens_ = 1;
  double ns_per_flop_ = 0, ns_per_backward_flop_ = 0, launch_ns_ = 0, cut_row_extra_pairs_ = 0;
  int64_t ranks_per_device_ = 1;
  std::vector<SharedDevice>
      devices_;  // when ranks_per_device_ > 1: by device (GPU slot / ranks_per_device_)
  bool copies_take_compute_ = false;  // ranks_per_device_ > 1 and GpuSpec::copies_take_compute
  std::vector<int64_t> copy_device_;  // by flow id: the device it is a copy on, or -1
  std::vector<RankState> ranks_;
  std::vector<PendingFlow> pending_;
  std::vector<int32_t> free_pending_;
  std::vector<FlowOwner> owners_;
  std::deque<Collective> collectives_;  // a deque: completing a member can open a new collective
                                        // while references to earlier ones are in use
  std::unordered_map<int64_t, int32_t> open_collectives_;  // (orbit, call) -> collectives_ index
  std::vector<int32_t> orbit_of_group_, orbit_size_;
  const std::vector<std::vector<int32_t>>* orbit_ranks_ =
      nullptr;  // per orbit, the ranks its calls wait for
  std::vector<std::vector<int32_t>> orbit_ranks_storage_;  // with symmetry: the representatives
  std::vector<double> level_bytes_;
  std::string error_;
};

}  // namespace

Result<SimResult> Simulate(const Schedule& schedule, const Topology& topology,
                           const std::vector<int64_t>& rank_to_gpu, DType dtype,
                           const SimOptions& options) {
  if (options.coalesce_compute && topology.gpu.ranks_per_device <= 1) {
    CoalescedSchedule view = CoalesceCompute(schedule);
    if (view.merged_ops > 0) {
      Replayer replayer(view.schedule, topology, rank_to_gpu, dtype, options, &view);
      auto result = replayer.Run();
      if (result.ok() && options.record_op_times) {
        result->op_times = replayer.OriginalOpTimes(schedule, result->op_times);
      }
      return result;
    }
  }
  Replayer replayer(schedule, topology, rank_to_gpu, dtype, options);
  return replayer.Run();
}

Result<SimResult> Simulate(Schedule&& schedule, const Topology& topology,
                           const std::vector<int64_t>& rank_to_gpu, DType dtype,
                           const SimOptions& options) {
  if (!options.coalesce_compute || options.record_op_times || topology.gpu.ranks_per_device > 1) {
    const Schedule kept = std::move(schedule);
    return Simulate(kept, topology, rank_to_gpu, dtype, options);
  }
  // Each rank's program is freed as soon as its view is made, so the two never coexist whole.
  return SimulateView(CoalesceCompute(std::move(schedule)), topology, rank_to_gpu, dtype, options);
}

Result<SimResult> SimulateView(CoalescedSchedule&& view, const Topology& topology,
                               const std::vector<int64_t>& rank_to_gpu, DType dtype,
                               const SimOptions& options) {
  if (options.record_op_times) return Status::Invalid("a timing view replays without op times");
  if (topology.gpu.ranks_per_device > 1)
    return Status::Invalid("no timing view on devices that ranks share");
  CoalescedSchedule kept = std::move(view);
  Replayer replayer(kept.schedule, topology, rank_to_gpu, dtype, options, &kept, &kept.schedule);
  return replayer.Run();
}

Result<SimResult> SimulateReplayView(ReplayView&& view, const Topology& topology,
                                     const std::vector<int64_t>& rank_to_gpu, DType dtype,
                                     const SimOptions& options, const RankSymmetry* symmetry) {
  if (options.record_op_times) return Status::Invalid("a timing view replays without op times");
  if (topology.gpu.ranks_per_device > 1)
    return Status::Invalid("no timing view on devices that ranks share");
  ReplayView kept = std::move(view);
  Replayer replayer(kept.header, topology, rank_to_gpu, dtype, options, nullptr, nullptr,
                    &kept.ranks);
  replayer.SetOrigins(&kept.begin, &kept.origin);
  replayer.SetSymmetry(symmetry);
  return replayer.Run();
}

}  // namespace meshplan::sim
