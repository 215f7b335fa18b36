#include "executor/device/launch_order.h"

#include <array>
#include <map>
#include <string>

namespace meshplan::exec {
namespace {

constexpr int kStreams = 4;

bool IsLocal(OpKind kind) { return kind == OpKind::kCompute || kind == OpKind::kMerge; }
bool IsCollective(OpKind kind) {
  return kind == OpKind::kAllGather || kind == OpKind::kReduceScatter || kind == OpKind::kAllToAll;
}

class Orderer {
 public:
  explicit Orderer(const Schedule& s) : s_(s) {
    const size_t n = static_cast<size_t>(s.num_ranks);
    queue_.resize(n);
    head_.assign(n, {});
    issued_.resize(n);
    match_.resize(n);
    instance_.resize(n);
    // k-th send from A to B <-> k-th receive on B from A; c-th collective of a group on each
    // member <-> the same instance.
    std::map<std::pair<int32_t, int32_t>, std::vector<uint32_t>> sends, recvs;
    std::vector<std::map<int32_t, int32_t>> seen(n);
    for (size_t r = 0; r < n; ++r) {
      const auto& ops = s.ranks[r].ops;
      issued_[r].assign(ops.size(), 0);
      in_window_.push_back(std::vector<uint8_t>(ops.size(), 0));
      match_[r].assign(ops.size(), UINT32_MAX);
      instance_[r].assign(ops.size(), -1);
      for (uint32_t i = 0; i < ops.size(); ++i) {
        const ::meshplan::Op& op = ops[i];
        queue_[r][static_cast<int>(op.stream)].push_back(i);
        if (op.kind == OpKind::kSend) sends[{static_cast<int32_t>(r), op.peer}].push_back(i);
        if (op.kind == OpKind::kRecv) recvs[{op.peer, static_cast<int32_t>(r)}].push_back(i);
        if (IsCollective(op.kind)) instance_[r][i] = seen[r][op.group]++;
      }
    }
    for (const auto& [key, list] : sends) {
      const auto it = recvs.find(key);
      for (size_t k = 0; k < list.size(); ++k) {
        if (it != recvs.end() && k < it->second.size()) {
          match_[key.first][list[k]] = it->second[k];
          match_[key.second][it->second[k]] = list[k];
        }
      }
    }
  }

  Result<LaunchOrder> Run() {
    LaunchOrder order;
    int64_t remaining = s_.TotalOps();
    while (remaining > 0) {
      bool progress = false;
      for (int32_t r = 0; r < s_.num_ranks; ++r) {
        for (int st = 0; st < kStreams; ++st) {
          while (true) {
            const uint32_t* i = Head(r, st);
            if (i == nullptr || !IsLocal(OpAt(r, *i).kind) || !DepsIssued(r, *i)) break;
            LaunchStep step;
            step.rank = r;
            step.op = *i;
            order.steps.push_back(std::move(step));
            issued_[r][*i] = 1;
            ++head_[r][st];
            --remaining;
            progress = true;
          }
        }
      }
      LaunchStep exchange;
      std::vector<std::pair<int32_t, uint32_t>> taken;
      MESHPLAN_RETURN_IF_ERROR(MatchPairs(&exchange, &taken));
      for (int32_t r = 0; r < s_.num_ranks; ++r) {
        for (int st = 0; st < kStreams; ++st) {
          const uint32_t* i = Head(r, st);
          if (i == nullptr || !Ready(r, *i)) continue;
          const ::meshplan::Op& op = OpAt(r, *i);
          if (!IsCollective(op.kind)) continue;
          const auto& members = s_.groups[op.group];
          if (members.empty() || members.front() != r) continue;  // the first member decides
          CollectiveLaunch c{op.group, {}};
          for (int32_t m : members) {
            // The member's instance of this collective, at the head of one of its streams.
            const uint32_t* any = nullptr;
            for (int ms = 0; ms < kStreams && any == nullptr; ++ms) {
              const uint32_t* h = Head(m, ms);
              if (h != nullptr && IsCollective(OpAt(m, *h).kind) && OpAt(m, *h).group == op.group &&
                  instance_[m][*h] == instance_[r][*i] && Ready(m, *h)) {
                any = h;
              }
            }
            if (any == nullptr) break;
            c.ops.push_back(*any);
          }
          if (c.ops.size() != members.size()) continue;
          for (size_t m = 0; m < members.size(); ++m) taken.push_back({members[m], c.ops[m]});
          exchange.collectives.push_back(std::move(c));
        }
      }
      if (!taken.empty()) {
        for (const auto& [r, i] : taken) {
          issued_[r][i] = 1;
          --remaining;
        }
        // Taken ops form a prefix of each stream's queue: move the heads past them.
        for (int32_t r = 0; r < s_.num_ranks; ++r) {
          for (int st = 0; st < kStreams; ++st) {
            while (const uint32_t* i = Head(r, st)) {
              if (!issued_[r][*i]) break;
              ++head_[r][st];
            }
          }
        }
        order.steps.push_back(std::move(exchange));
        progress = true;
      }
      if (!progress) return Stuck();
    }
    return order;
  }

 private:
  static bool IsPointToPoint(OpKind kind) { return kind == OpKind::kSend || kind == OpKind::kRecv; }

  // Finds every send/receive pair that can be posted now, as one NCCL group posts them: on each
  // stream a window of consecutive point-to-point ops from the head, each with its deps issued
  // in earlier steps; a pair is posted when both ends lie in windows. A window is cut before any
  // op whose partner is not posted, so each stream's posted ops stay a prefix (stream order), and
  // cutting repeats until no posted op misses its partner. Posting a stream's send and the
  // receive behind it together is what lets two ranks that both send first exchange (NCCL groups
  // do the same).
  Status MatchPairs(LaunchStep* exchange, std::vector<std::pair<int32_t, uint32_t>>* taken) {
    std::vector<std::array<size_t, kStreams>> window(static_cast<size_t>(s_.num_ranks));
    std::vector<std::pair<int32_t, uint32_t>> marked;
    for (int32_t r = 0; r < s_.num_ranks; ++r) {
      for (int st = 0; st < kStreams; ++st) {
        const auto& q = queue_[r][st];
        size_t k = head_[r][st];
        while (k < q.size() && IsPointToPoint(OpAt(r, q[k]).kind) && DepsIssued(r, q[k])) {
          if (match_[r][q[k]] == UINT32_MAX) {
            return Status::Internal("rank " + std::to_string(r) + " op " + std::to_string(q[k]) +
                                    ": send or receive without a partner");
          }
          in_window_[r][q[k]] = 1;
          marked.push_back({r, q[k]});
          ++k;
        }
        window[r][st] = k;
      }
    }
    for (bool changed = true; changed;) {
      changed = false;
      for (int32_t r = 0; r < s_.num_ranks; ++r) {
        for (int st = 0; st < kStreams; ++st) {
          const auto& q = queue_[r][st];
          for (size_t k = head_[r][st]; k < window[r][st]; ++k) {
            const ::meshplan::Op& op = OpAt(r, q[k]);
            if (in_window_[op.peer][match_[r][q[k]]]) continue;
            for (size_t cut = k; cut < window[r][st]; ++cut) in_window_[r][q[cut]] = 0;
            window[r][st] = k;
            changed = true;
            break;
          }
        }
      }
    }
    for (int32_t r = 0; r < s_.num_ranks; ++r) {
      for (int st = 0; st < kStreams; ++st) {
        const auto& q = queue_[r][st];
        for (size_t k = head_[r][st]; k < window[r][st]; ++k) {
          const ::meshplan::Op& op = OpAt(r, q[k]);
          taken->push_back({r, q[k]});
          if (op.kind == OpKind::kSend)
            exchange->pairs.push_back({r, op.peer, q[k], match_[r][q[k]]});
        }
      }
    }
    for (const auto& [r, i] : marked) in_window_[r][i] = 0;
    return Status::Ok();
  }

  const ::meshplan::Op& OpAt(int32_t r, uint32_t i) const { return s_.ranks[r].ops[i]; }

  const uint32_t* Head(int32_t r, int st) const {
    const auto& q = queue_[r][st];
    return head_[r][st] < q.size() ? &q[head_[r][st]] : nullptr;
  }

  bool DepsIssued(int32_t r, uint32_t i) const {
    const RankProgram& prog = s_.ranks[r];
    const ::meshplan::Op& op = prog.ops[i];
    for (uint32_t d = 0; d < op.dep_count; ++d) {
      if (!issued_[r][prog.deps[op.dep_begin + d]]) return false;
    }
    return true;
  }

  // At the head of its stream (checked by the caller), not yet taken, deps issued.
  bool Ready(int32_t r, uint32_t i) const { return !issued_[r][i] && DepsIssued(r, i); }

  Status Stuck() const {
    std::string report;
    int shown = 0, total = 0;
    for (int32_t r = 0; r < s_.num_ranks; ++r) {
      std::string heads;
      for (int st = 0; st < kStreams; ++st) {
        const uint32_t* i = Head(r, st);
        if (i == nullptr) continue;
        const ::meshplan::Op& op = OpAt(r, *i);
        heads += (heads.empty() ? "" : "; ") + std::string("op ") + std::to_string(*i) + " (" +
                 std::string(OpKindName(op.kind));
        if (op.kind == OpKind::kSend || op.kind == OpKind::kRecv) {
          heads += (op.kind == OpKind::kSend ? " to " : " from ") + std::to_string(op.peer);
        }
        heads += DepsIssued(r, *i) ? ", waits for its peer)" : ", waits for its deps)";
      }
      if (heads.empty()) continue;
      ++total;
      if (shown < 3) {
        report += (shown ? " | rank " : "rank ") + std::to_string(r) + ": " + heads;
        ++shown;
      }
    }
    return Status::Internal("cannot order the schedule for device issue (" + std::to_string(total) +
                            " ranks stuck): " + report);
  }

  const Schedule& s_;
  std::vector<std::array<std::vector<uint32_t>, kStreams>> queue_;
  std::vector<std::array<size_t, kStreams>> head_;
  std::vector<std::vector<uint8_t>> issued_;
  std::vector<std::vector<uint8_t>> in_window_;  // scratch of MatchPairs
  std::vector<std::vector<uint32_t>> match_;
  std::vector<std::vector<int32_t>> instance_;
};

}  // namespace

Result<LaunchOrder> BuildLaunchOrder(const Schedule& schedule) { return Orderer(schedule).Run(); }

}  // namespace meshplan::exec
