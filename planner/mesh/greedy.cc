// Mesh-Attention's greedy step schedule (docs/mesh-attention.md, "Greedy schedule").
//
// The schedule is built step by step in local indices. Each step:
//   1. starts at most one shift, chosen by "profit": the shift whose newly unlocked blocks lie in
//      the lowest-indexed line of the primary dimension (ties -> KV; when one dimension has no
//      shifts left, the other);
//   2. sends the partials whose chain rule is satisfied (all blocks of the line computed in an
//      earlier step, incoming partial merged: sent by the neighbour in an earlier step);
//   3. computes the usable blocks in priority order (primary lines first), holding back the
//      lowest-priority ones when the next step would otherwise have less computation than
//      communication, never holding a block that gates a partial send due in the next step and
//      never leaving this step with less computation than its own communication.
#include "planner/mesh/greedy.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace meshplan::planner::mesh {
namespace {

constexpr int32_t kNever = std::numeric_limits<int32_t>::max();
constexpr double kEps = 1e-9;

// One dimension's partial reduction chain: which slots are sent, in chain order.
struct Chain {
  bool active = false;             // the dimension reduces partials (group of >= 2 ranks)
  int32_t first = 0;               // first slot sent: 0 (owner-first) or 1 (owner-last)
  int32_t size = 0;                // slots in the dimension
  int32_t next = 0;                // next slot to send (== size when the chain is done)
  std::vector<int32_t> sent_step;  // step at which slot k was sent, kNever if not yet

  void Init(bool reduce, int32_t n, bool owner_first) {
    active = reduce && n >= 2;
    first = owner_first ? 0 : 1;
    size = n;
    next = active ? first : n;
    sent_step.assign(static_cast<size_t>(n), kNever);
  }
  bool Done() const { return next >= size; }
  // The incoming partial of slot k (the neighbour's slot k-1) is merged by step s.
  bool IncomingUsable(int32_t k, int32_t s) const {
    return k == first || (sent_step[static_cast<size_t>(k - 1)] != kNever &&
                          sent_step[static_cast<size_t>(k - 1)] < s);
  }
};

class Builder {
 public:
  explicit Builder(const GreedyOptions& o)
      : o_(o),
        a_(static_cast<int32_t>(o.a)),
        b_(static_cast<int32_t>(o.b)),
        q_ready_(static_cast<size_t>(a_), kNever),
        kv_ready_(static_cast<size_t>(b_), kNever),
        row_left_(static_cast<size_t>(a_), b_),
        col_left_(static_cast<size_t>(b_), a_),
        row_done_(static_cast<size_t>(a_), kNever),
        col_done_(static_cast<size_t>(b_), kNever) {
    const bool bwd = o.phase == Phase::kBackward;
    const bool owner_first = o.chain == ReduceChain::kOwnerFirst;
    rows_.Init(/*reduce=*/true, a_, owner_first);  // O (forward) or dQ (backward)
    cols_.Init(/*reduce=*/bwd, b_, owner_first);   // dK+dV (backward only)
    q_ready_[0] = 0;
    kv_ready_[0] = 0;
    next_q_ = 1;
    next_kv_ = 1;
    if (o.kv_present) {
      std::fill(kv_ready_.begin(), kv_ready_.end(), 0);
      next_kv_ = b_;
    }
    // Primary dimension: forward rows; backward the dimension whose chain costs more.
    const double row_chain = rows_.active ? o.costs.q_partial * (rows_.size - rows_.first) : 0;
    const double col_chain = cols_.active ? o.costs.kv_partial * (cols_.size - cols_.first) : 0;
    rows_primary_ = !bwd || row_chain >= col_chain;
    blocks_left_ = static_cast<int64_t>(a_) * b_;
  }

  std::vector<MeshStep> Run() {
    std::vector<MeshStep> steps;
    steps.reserve(static_cast<size_t>(2 * (a_ + b_) + 4));
    // Every step makes progress (a shift, a send or a block), so this bound is never reached by a
    // correct schedule; it only guards against an endless loop.
    const int64_t max_steps = 4 * (static_cast<int64_t>(a_) * b_ + a_ + b_) + 8;
    for (int32_t s = 0; !Finished(); ++s) {
      if (s > max_steps) break;
      steps.push_back(Step(s));
    }
    return steps;
  }

 private:
  bool Finished() const {
    return next_q_ >= a_ && next_kv_ >= b_ && blocks_left_ == 0 && rows_.Done() && cols_.Done();
  }

  // Profit rule (see the file comment). Returns the shift to start given the next slots.
  ShiftKind ChooseShift(int32_t next_q, int32_t next_kv) const {
    const bool q_left = next_q < a_, kv_left = next_kv < b_;
    if (!q_left && !kv_left) return ShiftKind::kNone;
    if (!q_left) return ShiftKind::kKV;
    if (!kv_left) return ShiftKind::kQ;
    // A Q shift unlocks blocks (next_q, l < next_kv); a KV shift unlocks (k < next_q, next_kv).
    // Lowest primary line index among the unlocked blocks:
    const int32_t q_line = rows_primary_ ? next_q : 0;
    const int32_t kv_line = rows_primary_ ? 0 : next_kv;
    return q_line < kv_line ? ShiftKind::kQ : ShiftKind::kKV;  // ties -> KV
  }

  double ShiftCost(ShiftKind kind) const {
    if (kind == ShiftKind::kQ) return o_.costs.q_shift;
    if (kind == ShiftKind::kKV) return o_.costs.kv_shift;
    return 0;
  }

  // The chain's next slot can be sent at step s given line completion steps `line_done`.
  static bool CanSend(const Chain& c, const std::vector<int32_t>& line_done, int32_t s) {
    if (c.Done()) return false;
    const int32_t k = c.next;
    return line_done[static_cast<size_t>(k)] < s && c.IncomingUsable(k, s);
  }

  MeshStep Step(int32_t s) {
    MeshStep step;
    // 1. Shift.
    step.shift = ChooseShift(next_q_, next_kv_);
    if (step.shift == ShiftKind::kQ) {
      step.shift_slot = next_q_;
      q_ready_[static_cast<size_t>(next_q_++)] = s + 1;
    } else if (step.shift == ShiftKind::kKV) {
      step.shift_slot = next_kv_;
      kv_ready_[static_cast<size_t>(next_kv_++)] = s + 1;
    }
    double comm_now = ShiftCost(step.shift);
    // 2. Partial sends (at most one per chain per step: slot k+1 needs slot k's send merged).
    if (CanSend(rows_, row_done_, s)) {
      step.q_partial_sends.push_back(rows_.next);
      rows_.sent_step[static_cast<size_t>(rows_.next++)] = s;
      comm_now += o_.costs.q_partial;
    }
    if (CanSend(cols_, col_done_, s)) {
      step.kv_partial_sends.push_back(cols_.next);
      cols_.sent_step[static_cast<size_t>(cols_.next++)] = s;
      comm_now += o_.costs.kv_partial;
    }
    // 3. Computation: usable blocks in priority order. Slots become usable in slot order, so the
    // usable blocks form a rectangle [0, nq) x [0, nkv) that only grows: the available blocks
    // are those held back earlier plus the rectangle's growth at this step.
    available_.swap(pending_);
    pending_.clear();
    int32_t nq = usable_q_, nkv = usable_kv_;
    while (nq < a_ && q_ready_[static_cast<size_t>(nq)] <= s) ++nq;
    while (nkv < b_ && kv_ready_[static_cast<size_t>(nkv)] <= s) ++nkv;
    for (int32_t k = usable_q_; k < nq; ++k) {
      for (int32_t l = 0; l < nkv; ++l) available_.push_back({k, l});
    }
    for (int32_t k = 0; k < usable_q_; ++k) {
      for (int32_t l = usable_kv_; l < nkv; ++l) available_.push_back({k, l});
    }
    usable_q_ = nq;
    usable_kv_ = nkv;
    const auto priority = [this](const LocalBlock& x, const LocalBlock& y) {
      return rows_primary_ ? (x.q != y.q ? x.q < y.q : x.kv < y.kv) : (x.kv != y.kv ? x.kv < y.kv : x.q < y.q);
    };
    // Usually a single new line arrives in order; sort only when needed.
    if (!std::is_sorted(available_.begin(), available_.end(), priority)) {
      std::sort(available_.begin(), available_.end(), priority);
    }
    const int32_t m = static_cast<int32_t>(available_.size());
    int32_t hold = 0;
    if (m > 1) hold = HoldBack(s, comm_now);
    // Hold back the `hold` lowest-priority blocks that do not gate a send due at s+1.
    held_.assign(available_.size(), 0);
    for (int32_t i = m - 1; i >= 0 && hold > 0; --i) {
      const LocalBlock& blk = available_[static_cast<size_t>(i)];
      if (blk.q == gate_row_ || blk.kv == gate_col_) continue;
      held_[static_cast<size_t>(i)] = 1;
      --hold;
    }
    step.compute.reserve(available_.size());
    for (int32_t i = 0; i < m; ++i) {
      const LocalBlock& blk = available_[static_cast<size_t>(i)];
      if (held_[static_cast<size_t>(i)]) {
        pending_.push_back(blk);
        continue;
      }
      step.compute.push_back(blk);
      --blocks_left_;
      if (--row_left_[static_cast<size_t>(blk.q)] == 0) row_done_[static_cast<size_t>(blk.q)] = s;
      if (--col_left_[static_cast<size_t>(blk.kv)] == 0) col_done_[static_cast<size_t>(blk.kv)] = s;
    }
    return step;
  }

  // How many of the available blocks to hold back for step s+1 (0 when none should be). Also
  // sets gate_row_/gate_col_: the lines whose partial send falls due at s+1 if every available
  // block is computed now (their blocks are never held).
  int32_t HoldBack(int32_t s, double comm_now) {
    gate_row_ = gate_col_ = -1;
    const int32_t m = static_cast<int32_t>(available_.size());
    // Line completion if everything available is computed at s.
    double comm_next = ShiftCost(ChooseShift(next_q_, next_kv_));
    auto due_next = [&](const Chain& c, bool rows) -> int32_t {
      if (c.Done()) return -1;
      const int32_t k = c.next;
      if (!c.IncomingUsable(k, s + 1)) return -1;
      const auto& done_step = rows ? row_done_ : col_done_;
      if (done_step[static_cast<size_t>(k)] != kNever) return k;  // already complete
      int32_t left = rows ? row_left_[static_cast<size_t>(k)] : col_left_[static_cast<size_t>(k)];
      for (const LocalBlock& blk : available_) left -= (rows ? blk.q : blk.kv) == k ? 1 : 0;
      return left == 0 ? k : -1;
    };
    gate_row_ = due_next(rows_, true);
    gate_col_ = due_next(cols_, false);
    if (gate_row_ >= 0) comm_next += o_.costs.q_partial;
    if (gate_col_ >= 0) comm_next += o_.costs.kv_partial;
    // Blocks first usable at s+1: the growth of the usable rectangle (none of them is done).
    int32_t nq = usable_q_, nkv = usable_kv_;
    while (nq < a_ && q_ready_[static_cast<size_t>(nq)] <= s + 1) ++nq;
    while (nkv < b_ && kv_ready_[static_cast<size_t>(nkv)] <= s + 1) ++nkv;
    const int32_t fresh = nq * nkv - usable_q_ * usable_kv_;
    const double block = std::max(o_.costs.block, kEps);
    const double need = comm_next - block * fresh;
    if (need <= kEps) return 0;
    const auto wanted = static_cast<int32_t>(std::ceil(need / block - kEps));
    const auto spare = static_cast<int32_t>(std::floor((block * m - comm_now) / block + kEps));
    return std::clamp(std::min(wanted, spare), 0, m - 1);
  }

  const GreedyOptions& o_;
  int32_t a_, b_;
  std::vector<int32_t> q_ready_, kv_ready_;  // step from which slot is usable
  std::vector<int32_t> row_left_, col_left_;  // blocks not yet computed per line
  std::vector<int32_t> row_done_, col_done_;  // step of the line's last block
  int32_t next_q_ = 1, next_kv_ = 1;          // next slot a shift delivers
  Chain rows_, cols_;
  bool rows_primary_ = true;
  int64_t blocks_left_ = 0;
  std::vector<LocalBlock> available_;  // usable, not yet computed, in priority order
  std::vector<LocalBlock> pending_;    // held back at the previous step
  int32_t usable_q_ = 0, usable_kv_ = 0;  // the usable rectangle at the last computed step
  std::vector<uint8_t> held_;
  int32_t gate_row_ = -1, gate_col_ = -1;
};

}  // namespace

std::vector<MeshStep> GreedySchedule(const GreedyOptions& options) {
  if (options.a < 1 || options.b < 1) return {};
  return Builder(options).Run();
}

}  // namespace meshplan::planner::mesh
