#include "planner/schedule_check.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <deque>
#include <string>

namespace meshplan::planner {
namespace {

constexpr uint32_t kNone = UINT32_MAX;
constexpr int kNumStreams = 4;

bool IsCollective(OpKind kind) {
  return kind == OpKind::kAllGather || kind == OpKind::kReduceScatter || kind == OpKind::kAllToAll;
}

std::string Where(int64_t rank, uint32_t index, const Op& op) {
  return "rank " + std::to_string(rank) + " op " + std::to_string(index) + " (" +
         std::string(OpKindName(op.kind)) + ")";
}

std::string Fail(const Schedule& s, int64_t rank, uint32_t index, const std::string& what) {
  return Where(rank, index, s.ranks[rank].ops[index]) + ": " + what;
}

std::string MessageText(const Op& op) {
  return "tag " + std::to_string(op.tag) + ", " +
         (op.tensors ? TensorNames(op.tensors) : "no tensors") + ", " + std::to_string(op.bytes) +
         " bytes";
}

// Shape: sizes, ranges and backward-pointing deps.
Status CheckShape(const Schedule& s, const PlanContext& ctx) {
  if (s.num_ranks != ctx.num_ranks) {
    return Status::Invalid("schedule has " + std::to_string(s.num_ranks) + " ranks, the cluster " +
                           std::to_string(ctx.num_ranks));
  }
  if (static_cast<int64_t>(s.ranks.size()) != s.num_ranks) {
    return Status::Invalid("schedule has " + std::to_string(s.ranks.size()) + " programs for " +
                           std::to_string(s.num_ranks) + " ranks");
  }
  for (size_t g = 0; g < s.groups.size(); ++g) {
    std::vector<int32_t> sorted = s.groups[g];
    std::sort(sorted.begin(), sorted.end());
    if (sorted.empty() || sorted.front() < 0 || sorted.back() >= s.num_ranks ||
        std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
      return Status::Invalid("group " + std::to_string(g) +
                             " is empty, has a rank out of range or a duplicate");
    }
  }
  const int64_t shards = s.layout.num_shards, heads = ctx.workload.q_heads;
  for (int64_t r = 0; r < s.num_ranks; ++r) {
    const RankProgram& prog = s.ranks[r];
    for (uint32_t i = 0; i < prog.ops.size(); ++i) {
      const Op& op = prog.ops[i];
      if (static_cast<uint64_t>(op.dep_begin) + op.dep_count > prog.deps.size()) {
        return Status::Invalid(Fail(s, r, i, "dep range past the end of the dep list"));
      }
      for (uint32_t d = 0; d < op.dep_count; ++d) {
        const uint32_t dep = prog.deps[op.dep_begin + d];
        if (dep >= i) {
          return Status::Invalid(
              Fail(s, r, i, "dep on op " + std::to_string(dep) + " does not point backwards"));
        }
      }
      if (op.bytes < 0) return Status::Invalid(Fail(s, r, i, "negative bytes"));
      if (op.kind == OpKind::kSend || op.kind == OpKind::kRecv) {
        if (op.peer < 0 || op.peer >= s.num_ranks || op.peer == r) {
          return Status::Invalid(
              Fail(s, r, i, "peer " + std::to_string(op.peer) + " is not another rank"));
        }
      } else if (IsCollective(op.kind)) {
        if (op.group < 0 || op.group >= static_cast<int64_t>(s.groups.size())) {
          return Status::Invalid(
              Fail(s, r, i, "group " + std::to_string(op.group) + " does not exist"));
        }
        const auto& members = s.groups[op.group];
        if (std::find(members.begin(), members.end(), r) == members.end()) {
          return Status::Invalid(
              Fail(s, r, i, "rank is not a member of group " + std::to_string(op.group)));
        }
      } else if (op.kind == OpKind::kCompute) {
        if (op.q_shard < 0 || op.q_shard >= shards || op.kv_shard < 0 || op.kv_shard >= shards) {
          return Status::Invalid(Fail(s, r, i,
                                      "block (" + std::to_string(op.q_shard) + ", " +
                                          std::to_string(op.kv_shard) + ") outside the " +
                                          std::to_string(shards) + " shards"));
        }
        if (op.head_count <= 0 || op.head_begin < 0 || op.head_begin + op.head_count > heads) {
          return Status::Invalid(Fail(s, r, i,
                                      "heads [" + std::to_string(op.head_begin) + ", " +
                                          std::to_string(op.head_begin + op.head_count) +
                                          ") outside the " + std::to_string(heads) +
                                          " query heads"));
        }
      }
    }
  }
  return Status::Ok();
}

// Pairs the k-th send src -> dst with the k-th recv on dst from src; match[dst][recv] = send.
Status MatchMessages(const Schedule& s, std::vector<std::vector<uint32_t>>& match) {
  const int64_t n = s.num_ranks;
  using Entry = std::pair<int32_t, uint32_t>;  // (peer, op), sorted by peer then program order
  std::vector<std::vector<Entry>> sends(n), recvs(n);
  for (int64_t r = 0; r < n; ++r) {
    for (uint32_t i = 0; i < s.ranks[r].ops.size(); ++i) {
      const Op& op = s.ranks[r].ops[i];
      if (op.kind == OpKind::kSend) sends[r].push_back({op.peer, i});
      if (op.kind == OpKind::kRecv) recvs[r].push_back({op.peer, i});
    }
    std::sort(sends[r].begin(), sends[r].end());
    std::sort(recvs[r].begin(), recvs[r].end());
  }
  auto range = [](const std::vector<Entry>& v, int32_t peer) {
    auto lo = std::lower_bound(v.begin(), v.end(), Entry{peer, 0});
    auto hi = std::lower_bound(v.begin(), v.end(), Entry{peer + 1, 0});
    return std::make_pair(lo, hi);
  };
  for (int64_t src = 0; src < n; ++src) {
    for (auto it = sends[src].cbegin(); it != sends[src].cend();) {
      const int32_t dst = it->first;
      auto [s_lo, s_hi] = range(sends[src], dst);
      auto [r_lo, r_hi] = range(recvs[dst], static_cast<int32_t>(src));
      const int64_t ns = s_hi - s_lo, nr = r_hi - r_lo;
      for (int64_t k = 0; k < std::min(ns, nr); ++k) {
        const Op& so = s.ranks[src].ops[s_lo[k].second];
        const Op& ro = s.ranks[dst].ops[r_lo[k].second];
        if (so.tag != ro.tag || so.tensors != ro.tensors || so.bytes != ro.bytes) {
          return Status::Invalid(
              Fail(s, src, s_lo[k].second,
                   "send #" + std::to_string(k) + " to rank " + std::to_string(dst) + " (" +
                       MessageText(so) + ") differs from its recv, rank " + std::to_string(dst) +
                       " op " + std::to_string(r_lo[k].second) + " (" + MessageText(ro) + ")"));
        }
        match[dst][r_lo[k].second] = s_lo[k].second;
      }
      if (ns > nr) {
        return Status::Invalid(Fail(s, src, s_lo[nr].second,
                                    "send #" + std::to_string(nr) + " to rank " +
                                        std::to_string(dst) + " has no matching recv (rank " +
                                        std::to_string(dst) + " receives " + std::to_string(nr) +
                                        " messages from rank " + std::to_string(src) + ")"));
      }
      it = s_hi;
    }
  }
  for (int64_t dst = 0; dst < n; ++dst) {
    for (const Entry& e : recvs[dst]) {
      if (match[dst][e.second] == kNone) {
        auto [s_lo, s_hi] = range(sends[e.first], static_cast<int32_t>(dst));
        return Status::Invalid(Fail(s, dst, e.second,
                                    "recv from rank " + std::to_string(e.first) +
                                        " has no matching send (rank " + std::to_string(e.first) +
                                        " sends " + std::to_string(s_hi - s_lo) +
                                        " messages to rank " + std::to_string(dst) + ")"));
      }
    }
  }
  return Status::Ok();
}

// Every member issues the same collectives on a group. coll[r][op] = index k of the op among
// the rank's collectives on its group; instance ids are offset[group] + k.
struct CollectiveIndex {
  std::vector<std::vector<std::vector<uint32_t>>> per_member;  // [group][member][k] = op index
  std::vector<int64_t> offset;                                 // first instance id of each group
};
Status MatchCollectives(const Schedule& s, std::vector<std::vector<uint32_t>>& coll,
                        CollectiveIndex& index) {
  const size_t ng = s.groups.size();
  auto& per_member = index.per_member;
  auto& offset = index.offset;
  per_member.assign(ng, {});
  for (size_t g = 0; g < ng; ++g) per_member[g].resize(s.groups[g].size());
  for (int64_t r = 0; r < s.num_ranks; ++r) {
    for (uint32_t i = 0; i < s.ranks[r].ops.size(); ++i) {
      const Op& op = s.ranks[r].ops[i];
      if (!IsCollective(op.kind)) continue;
      const auto& members = s.groups[op.group];
      const size_t m =
          static_cast<size_t>(std::find(members.begin(), members.end(), r) - members.begin());
      coll[r][i] = static_cast<uint32_t>(per_member[op.group][m].size());
      per_member[op.group][m].push_back(i);
    }
  }
  offset.assign(ng + 1, 0);
  for (size_t g = 0; g < ng; ++g) {
    const auto& members = s.groups[g];
    const auto& first = per_member[g][0];
    for (size_t m = 1; m < members.size(); ++m) {
      const auto& mine = per_member[g][m];
      for (size_t k = 0; k < std::max(first.size(), mine.size()); ++k) {
        if (k >= mine.size() || k >= first.size()) {
          const bool short_me = k >= mine.size();
          const int64_t rank = short_me ? members[0] : members[m];
          const uint32_t op = short_me ? first[k] : mine[k];
          return Status::Invalid(Fail(s, rank, op,
                                      "collective #" + std::to_string(k) + " on group " +
                                          std::to_string(g) + " is not issued by rank " +
                                          std::to_string(short_me ? members[m] : members[0])));
        }
        const Op& a = s.ranks[members[0]].ops[first[k]];
        const Op& b = s.ranks[members[m]].ops[mine[k]];
        if (a.kind != b.kind || a.tensors != b.tensors || a.bytes != b.bytes ||
            (a.kind == OpKind::kAllToAll && a.a2a != b.a2a)) {
          return Status::Invalid(
              Fail(s, members[m], mine[k],
                   "collective #" + std::to_string(k) + " on group " + std::to_string(g) + " (" +
                       std::string(OpKindName(b.kind)) + ", " + MessageText(b) +
                       ") differs from rank " + std::to_string(members[0]) + "'s (" +
                       std::string(OpKindName(a.kind)) + ", " + MessageText(a) + ")"));
        }
      }
    }
    offset[g + 1] = offset[g] + static_cast<int64_t>(first.size());
  }
  return Status::Ok();
}

}  // namespace

namespace {

// Runs every rank's program under the FIFO-stream semantics of CheckSchedule.
class Interpreter {
 public:
  Interpreter(const Schedule& s, const std::vector<std::vector<uint32_t>>& match,
              const std::vector<std::vector<uint32_t>>& coll, const CollectiveIndex& index)
      : s_(s), match_(match), coll_(coll), index_(index) {
    const size_t n = static_cast<size_t>(s.num_ranks);
    done_.resize(n);
    reached_.resize(n);
    queue_.resize(n);
    head_.assign(n, {});
    queued_.assign(n, 1);
    for (size_t r = 0; r < n; ++r) {
      const auto& ops = s.ranks[r].ops;
      done_[r].assign(ops.size(), 0);
      reached_[r].assign(ops.size(), 0);
      for (uint32_t i = 0; i < ops.size(); ++i)
        queue_[r][static_cast<int>(ops[i].stream)].push_back(i);
    }
    arrived_.assign(static_cast<size_t>(index.offset.back()), 0);
  }

  Status Run() {
    std::deque<int64_t> work;
    for (int64_t r = 0; r < s_.num_ranks; ++r) work.push_back(r);
    while (!work.empty()) {
      const int64_t r = work.front();
      work.pop_front();
      queued_[r] = 0;
      Advance(r, work);
    }
    return Deadlocks();
  }

 private:
  bool DepsDone(int64_t r, const Op& op, uint32_t* blocking) const {
    const RankProgram& prog = s_.ranks[r];
    for (uint32_t d = 0; d < op.dep_count; ++d) {
      const uint32_t dep = prog.deps[op.dep_begin + d];
      if (!done_[r][dep]) {
        if (blocking) *blocking = dep;
        return false;
      }
    }
    return true;
  }

  void Wake(int64_t r, std::deque<int64_t>& work) {
    if (!queued_[r]) {
      queued_[r] = 1;
      work.push_back(r);
    }
  }

  void Advance(int64_t r, std::deque<int64_t>& work) {
    const auto& ops = s_.ranks[r].ops;
    bool progress = true;
    while (progress) {
      progress = false;
      for (int st = 0; st < kNumStreams; ++st) {
        auto& q = queue_[r][st];
        size_t& head = head_[r][st];
        while (head < q.size()) {
          const uint32_t i = q[head];
          const Op& op = ops[i];
          if (!DepsDone(r, op, nullptr)) break;
          if (op.kind == OpKind::kRecv) {
            if (!done_[op.peer][match_[r][i]]) break;
            done_[r][i] = 1;
          } else if (IsCollective(op.kind)) {
            if (!reached_[r][i]) {
              reached_[r][i] = 1;
              const int64_t inst = index_.offset[op.group] + coll_[r][i];
              const auto& members = s_.groups[op.group];
              if (++arrived_[inst] == static_cast<int64_t>(members.size())) {
                for (size_t m = 0; m < members.size(); ++m) {
                  done_[members[m]][index_.per_member[op.group][m][coll_[r][i]]] = 1;
                  if (members[m] != r) Wake(members[m], work);
                }
              }
            }
            if (!done_[r][i]) break;
          } else {
            done_[r][i] = 1;
            if (op.kind == OpKind::kSend) Wake(op.peer, work);
          }
          ++head;
          progress = true;
        }
      }
    }
  }

  std::string Stuck(int64_t r, uint32_t i) const {
    const Op& op = s_.ranks[r].ops[i];
    std::string out = "op " + std::to_string(i) + " (" + std::string(OpKindName(op.kind));
    if (op.kind == OpKind::kSend || op.kind == OpKind::kRecv) {
      out += (op.kind == OpKind::kSend ? " to " : " from ") + std::to_string(op.peer);
    }
    out += ", " + std::string(StreamName(op.stream)) + " stream) ";
    uint32_t dep = 0;
    if (!DepsDone(r, op, &dep)) return out + "waits for op " + std::to_string(dep);
    if (op.kind == OpKind::kRecv) {
      return out + "waits for rank " + std::to_string(op.peer) + " op " +
             std::to_string(match_[r][i]);
    }
    const int64_t inst = index_.offset[op.group] + coll_[r][i];
    return out + "waits for group " + std::to_string(op.group) + " (" +
           std::to_string(arrived_[inst]) + " of " + std::to_string(s_.groups[op.group].size()) +
           " members arrived)";
  }

  Status Deadlocks() const {
    std::string report;
    int ranks = 0, total = 0;
    for (int64_t r = 0; r < s_.num_ranks; ++r) {
      std::string heads;
      for (int st = 0; st < kNumStreams; ++st) {
        if (head_[r][st] < queue_[r][st].size())
          heads += (heads.empty() ? "" : "; ") + Stuck(r, queue_[r][st][head_[r][st]]);
      }
      if (heads.empty()) continue;
      ++total;
      if (ranks < 3) {
        report += (ranks ? " | rank " : "rank ") + std::to_string(r) + ": " + heads;
        ++ranks;
      }
    }
    if (total == 0) return Status::Ok();
    return Status::Invalid("deadlock (" + std::to_string(total) + " ranks stuck): " + report);
  }

  const Schedule& s_;
  const std::vector<std::vector<uint32_t>>& match_;
  const std::vector<std::vector<uint32_t>>& coll_;
  const CollectiveIndex& index_;
  std::vector<std::vector<uint8_t>> done_, reached_;
  std::vector<std::array<std::vector<uint32_t>, kNumStreams>> queue_;
  std::vector<std::array<size_t, kNumStreams>> head_;
  std::vector<uint8_t> queued_;
  std::vector<int64_t> arrived_;
};

struct BlockEntry {
  uint64_t block;
  int32_t head_begin, head_count;
  int32_t rank;
  uint32_t op;
  bool operator<(const BlockEntry& o) const {
    return block != o.block ? block < o.block : head_begin < o.head_begin;
  }
};

// Every block with pairs computed once per head in each phase of the pass; flops exact.
Status CheckCoverage(const Schedule& s, const PlanContext& ctx) {
  const uint64_t shards = static_cast<uint64_t>(s.layout.num_shards);
  const int32_t heads = static_cast<int32_t>(ctx.workload.q_heads);
  std::vector<BlockEntry> entries[2];
  for (int64_t r = 0; r < s.num_ranks; ++r) {
    const auto& ops = s.ranks[r].ops;
    for (uint32_t i = 0; i < ops.size(); ++i) {
      const Op& op = ops[i];
      if (op.kind != OpKind::kCompute) continue;
      entries[static_cast<int>(op.phase)].push_back(
          {static_cast<uint64_t>(op.q_shard) * shards + static_cast<uint64_t>(op.kv_shard),
           op.head_begin, op.head_count, static_cast<int32_t>(r), i});
    }
  }
  const bool in_pass[2] = {HasForward(ctx.workload.pass), HasBackward(ctx.workload.pass)};
  const char* kPhaseName[2] = {"forward", "backward"};
  for (int ph = 0; ph < 2; ++ph) {
    auto& e = entries[ph];
    if (!in_pass[ph] && !e.empty()) {
      return Status::Invalid(Fail(s, e[0].rank, e[0].op,
                                  std::string(kPhaseName[ph]) + " compute, but the pass is " +
                                      std::string(PassName(ctx.workload.pass))));
    }
    std::sort(e.begin(), e.end());
  }
  if (!in_pass[0] && !in_pass[1]) return Status::Ok();
  size_t pos[2] = {0, 0};
  for (uint64_t block = 0; block < shards * shards; ++block) {
    const int64_t qi = static_cast<int64_t>(block / shards),
                  kj = static_cast<int64_t>(block % shards);
    const auto name_of = [&] {
      return "block (" + std::to_string(qi) + ", " + std::to_string(kj) + ")";
    };
    const int64_t pairs = s.layout.BlockPairs(ctx.counter, qi, kj);
    for (int ph = 0; ph < 2; ++ph) {
      if (!in_pass[ph]) continue;
      auto& e = entries[ph];
      int32_t covered = 0;
      for (; pos[ph] < e.size() && e[pos[ph]].block == block; ++pos[ph]) {
        const BlockEntry& b = e[pos[ph]];
        const Op& op = s.ranks[b.rank].ops[b.op];
        if (pairs == 0)
          return Status::Invalid(
              Fail(s, b.rank, b.op, name_of() + " has no unmasked pairs but is computed"));
        if (b.head_begin < covered) {
          return Status::Invalid(
              Fail(s, b.rank, b.op,
                   name_of() + " heads [" + std::to_string(b.head_begin) + ", " +
                       std::to_string(std::min(covered, b.head_begin + b.head_count)) +
                       ") computed twice in the " + kPhaseName[ph] + " pass"));
        }
        if (b.head_begin > covered) {
          return Status::Invalid(name_of() + ": heads [" + std::to_string(covered) + ", " +
                                 std::to_string(b.head_begin) + ") never computed in the " +
                                 kPhaseName[ph] + " pass");
        }
        covered = b.head_begin + b.head_count;
        const double want =
            ctx.ForwardFlops(pairs, b.head_count) * (ph == 1 ? kBackwardFlopsFactor : 1.0);
        if (std::abs(op.flops - want) > 1e-9 * want) {
          return Status::Invalid(Fail(s, b.rank, b.op,
                                      name_of() + " has " + std::to_string(op.flops) +
                                          " flops, expected " + std::to_string(want)));
        }
      }
      if (pairs > 0 && covered < heads) {
        return Status::Invalid(name_of() + " (" + std::to_string(pairs) +
                               " unmasked pairs): heads [" + std::to_string(covered) + ", " +
                               std::to_string(heads) + ") never computed in the " + kPhaseName[ph] +
                               " pass");
      }
    }
  }
  return Status::Ok();
}

}  // namespace

ScheduleSummary Summarize(const Schedule& schedule) {
  ScheduleSummary out;
  const size_t n = schedule.ranks.size();
  out.bytes_sent.assign(n, 0);
  out.bytes_received.assign(n, 0);
  out.flops.assign(n, 0);
  out.flops_forward.assign(n, 0);
  out.flops_backward.assign(n, 0);
  for (size_t r = 0; r < n; ++r) {
    for (const Op& op : schedule.ranks[r].ops) {
      ++out.ops;
      switch (op.kind) {
        case OpKind::kCompute:
          ++out.computes;
          out.flops[r] += op.flops;
          (op.phase == Phase::kForward ? out.flops_forward : out.flops_backward)[r] += op.flops;
          break;
        case OpKind::kMerge:
          ++out.merges;
          break;
        case OpKind::kSend:
          ++out.sends;
          out.bytes_sent[r] += static_cast<double>(op.bytes);
          break;
        case OpKind::kRecv:
          ++out.recvs;
          out.bytes_received[r] += static_cast<double>(op.bytes);
          break;
        case OpKind::kAllGather:
        case OpKind::kReduceScatter:
        case OpKind::kAllToAll:
          ++out.collectives;
          out.bytes_sent[r] += static_cast<double>(op.bytes);
          out.bytes_received[r] += static_cast<double>(op.bytes);
          break;
      }
    }
  }
  return out;
}

double Imbalance(const std::vector<double>& per_rank) {
  if (per_rank.empty()) return 1.0;
  double sum = 0, max = 0;
  for (double v : per_rank) {
    sum += v;
    max = std::max(max, v);
  }
  const double mean = sum / static_cast<double>(per_rank.size());
  return mean > 0 ? max / mean : 1.0;
}

double FlopsImbalance(const ScheduleSummary& summary) { return Imbalance(summary.flops); }

Status CheckSchedule(const Schedule& s, const PlanContext& ctx) {
  MESHPLAN_RETURN_IF_ERROR(CheckShape(s, ctx));
  std::vector<std::vector<uint32_t>> match(s.ranks.size()), coll(s.ranks.size());
  for (size_t r = 0; r < s.ranks.size(); ++r) {
    match[r].assign(s.ranks[r].ops.size(), kNone);
    coll[r].assign(s.ranks[r].ops.size(), kNone);
  }
  MESHPLAN_RETURN_IF_ERROR(MatchMessages(s, match));
  CollectiveIndex index;
  MESHPLAN_RETURN_IF_ERROR(MatchCollectives(s, coll, index));
  MESHPLAN_RETURN_IF_ERROR(Interpreter(s, match, coll, index).Run());
  return CheckCoverage(s, ctx);
}

}  // namespace meshplan::planner
