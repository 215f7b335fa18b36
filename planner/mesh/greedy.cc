// Mesh-Attention's greedy step schedule (docs/mesh-attention.md, "Greedy schedule").
//
// The schedule is built step by step in local indices. Each step:
//   1. starts at most one shift, chosen by "profit": the shift whose newly unlocked blocks lie in
//      the lowest-indexed line of the primary dimension (ties -> KV; when one dimension has no
//      shifts left, the other);
//   2. sends the partials whose chain rule is satisfied (all blocks of the line computed in an
//      earlier step, incoming partial merged: sent by the neighbour in an earlier step);
//   3. computes usable blocks "just in time" for the reduce chains (chain pacing):
//      - a line whose partial send would fall due at the next step is computed now (forced);
//      - the other usable blocks are taken in chain order (the line whose partial leaves first
//        comes first; owner-last puts the owner's own line last, since it is never sent), and
//        the lowest ones are held back for the communication of later steps (shifts not yet
//        started, partials not yet sent): when the usable blocks can hide every later message
//        and this step's, the step computes all but what the later ones need; when they
//        cannot, the step computes no more than its own communication lasts (rounded down),
//        since a block hides as much in any step; at least one block is computed when any is
//        usable.
//      With a 1 x n tile and KV cached this is Ring's pipeline: one block per step, each dK+dV
//      hop overlapping the next block.
#include "planner/mesh/greedy.h"

#include <algorithm>
#include <cmath>
#include <functional>
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
  int32_t SendsLeft() const { return Done() ? 0 : size - next; }
  // The incoming partial of slot k (the neighbour's slot k-1) is merged by step s.
  bool IncomingUsable(int32_t k, int32_t s) const {
    return k == first || (sent_step[static_cast<size_t>(k - 1)] != kNever &&
                          sent_step[static_cast<size_t>(k - 1)] < s);
  }
  // Position of slot k in the order the chain needs its lines: the sent slots in send order,
  // then the owner's own line (owner-last), which only receives the total. Slot order when the
  // dimension has no chain.
  int32_t Position(int32_t k) const {
    if (!active || first == 0) return k;
    return k == 0 ? size - 1 : k - 1;
  }
  int32_t SlotAt(int32_t pos) const {
    if (!active || first == 0) return pos;
    return pos == size - 1 ? 0 : pos + 1;
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
        col_done_(static_cast<size_t>(b_), kNever),
        computed_(static_cast<size_t>(a_) * static_cast<size_t>(b_), 0) {
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
    block_ = std::max(o.costs.block, kEps);
    // Key(k, l) = row_key_[k] + col_key_[l]: the rank of block (k, l) in chain order.
    row_key_.resize(static_cast<size_t>(a_));
    col_key_.resize(static_cast<size_t>(b_));
    for (int32_t k = 0; k < a_; ++k)
      row_key_[static_cast<size_t>(k)] = rows_.Position(k) * (rows_primary_ ? b_ : 1);
    for (int32_t l = 0; l < b_; ++l)
      col_key_[static_cast<size_t>(l)] = cols_.Position(l) * (rows_primary_ ? 1 : a_);
    hide_q_shift_ = BlocksToHide(o.costs.q_shift);
    hide_kv_shift_ = BlocksToHide(o.costs.kv_shift);
    hide_q_partial_ = BlocksToHide(o.costs.q_partial);
    hide_kv_partial_ = BlocksToHide(o.costs.kv_partial);
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

  // Blocks whose computation one message of `cost` can hide (a message of ~zero cost: none).
  int64_t BlocksToHide(double cost) const {
    return cost > kEps ? static_cast<int64_t>(std::ceil(cost / block_ - kEps)) : 0;
  }

  // Calls f(slot) for the slots lo..hi-1 of chain c's dimension in chain order (Chain::Position:
  // increasing, except that an owner-last chain puts slot 0 last).
  template <typename F>
  static void ForEachInChainOrder(const Chain& c, int32_t lo, int32_t hi, F&& f) {
    const bool owner_last = c.active && c.first == 1 && lo == 0 && hi > 0;
    for (int32_t k = owner_last ? 1 : lo; k < hi; ++k) f(k);
    if (owner_last) f(0);
  }

  // Calls f(k, l) for the blocks that became usable at this step, in chain order within each of
  // the two rectangles (primary dimension outer).
  template <typename F>
  void ForEachFresh(F&& f) const {
    for (const Rect& r : fresh_) {
      if (r.q0 >= r.q1 || r.kv0 >= r.kv1) continue;
      if (rows_primary_) {
        ForEachInChainOrder(rows_, r.q0, r.q1, [&](int32_t k) {
          ForEachInChainOrder(cols_, r.kv0, r.kv1, [&](int32_t l) { f(k, l); });
        });
      } else {
        ForEachInChainOrder(cols_, r.kv0, r.kv1, [&](int32_t l) {
          ForEachInChainOrder(rows_, r.q0, r.q1, [&](int32_t k) { f(k, l); });
        });
      }
    }
  }

  // The chain's next slot can be sent at step s given line completion steps `line_done`.
  static bool CanSend(const Chain& c, const std::vector<int32_t>& line_done, int32_t s) {
    if (c.Done()) return false;
    const int32_t k = c.next;
    return line_done[static_cast<size_t>(k)] < s && c.IncomingUsable(k, s);
  }

  // Heap key of block (k, l): its rank in chain order, primary dimension first.
  int32_t Key(int32_t k, int32_t l) const {
    return row_key_[static_cast<size_t>(k)] + col_key_[static_cast<size_t>(l)];
  }
  LocalBlock BlockOf(int32_t key) const {
    if (rows_primary_) return {rows_.SlotAt(key / b_), cols_.SlotAt(key % b_)};
    return {rows_.SlotAt(key % a_), cols_.SlotAt(key / a_)};
  }
  bool IsComputed(int32_t k, int32_t l) const {
    return computed_[static_cast<size_t>(k) * static_cast<size_t>(b_) + static_cast<size_t>(l)] !=
           0;
  }

  // The line the chain would send at step s+1 if every usable block were computed at step s
  // (all its blocks usable, its incoming partial merged by then), else -1.
  int32_t DueNext(const Chain& c, bool rows, int32_t s) const {
    if (c.Done()) return -1;
    const int32_t k = c.next;
    if (!c.IncomingUsable(k, s + 1)) return -1;
    const bool complete =
        rows ? (k < usable_q_ && usable_kv_ == b_) : (k < usable_kv_ && usable_q_ == a_);
    return complete ? k : -1;
  }

  void Compute(int32_t k, int32_t l, int32_t s, MeshStep& step) {
    computed_[static_cast<size_t>(k) * static_cast<size_t>(b_) + static_cast<size_t>(l)] = 1;
    step.compute.push_back({k, l});
    --blocks_left_;
    --usable_left_;
    if (--row_left_[static_cast<size_t>(k)] == 0) row_done_[static_cast<size_t>(k)] = s;
    if (--col_left_[static_cast<size_t>(l)] == 0) col_done_[static_cast<size_t>(l)] = s;
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
    // 3. Computation. Slots become usable in slot order, so the usable blocks form a rectangle
    // [0, nq) x [0, nkv) that only grows; its growth joins the blocks held back earlier.
    int32_t nq = usable_q_, nkv = usable_kv_;
    while (nq < a_ && q_ready_[static_cast<size_t>(nq)] <= s) ++nq;
    while (nkv < b_ && kv_ready_[static_cast<size_t>(nkv)] <= s) ++nkv;
    // The growth: new rows x [0, nkv), and the old rows x new columns.
    fresh_[0] = {usable_q_, nq, 0, nkv};
    fresh_[1] = {0, usable_q_, usable_kv_, nkv};
    usable_left_ += static_cast<int64_t>(nq) * nkv - static_cast<int64_t>(usable_q_) * usable_kv_;
    usable_q_ = nq;
    usable_kv_ = nkv;
    if (usable_left_ == 0) return step;

    // Forced: the lines whose partial send falls due at s+1 (never held: that would delay the
    // chain by a step).
    const int32_t gate_row = DueNext(rows_, true, s);
    const int32_t gate_col = DueNext(cols_, false, s);
    step.compute.reserve(
        static_cast<size_t>((gate_row >= 0 ? row_left_[static_cast<size_t>(gate_row)] : 0) +
                            (gate_col >= 0 ? col_left_[static_cast<size_t>(gate_col)] : 0)));
    if (gate_row >= 0 && row_left_[static_cast<size_t>(gate_row)] > 0) {
      ForEachInChainOrder(cols_, 0, b_, [&](int32_t l) {
        if (!IsComputed(gate_row, l)) Compute(gate_row, l, s, step);
      });
    }
    if (gate_col >= 0 && col_left_[static_cast<size_t>(gate_col)] > 0) {
      ForEachInChainOrder(rows_, 0, a_, [&](int32_t k) {
        if (!IsComputed(k, gate_col)) Compute(k, gate_col, s, step);
      });
    }
    const int64_t forced = static_cast<int64_t>(step.compute.size());
    const int64_t optional = usable_left_;
    // Blocks the communication of later steps can use: every shift not yet started and every
    // partial not yet sent, BlocksToHide of its cost in its own step. (An upper bound: blocks
    // that arrive later can hide some of it too; holding more than needed costs nothing in the
    // step model, the held blocks then run at the last steps.)
    int64_t hold = 0;
    if (optional > (forced == 0 ? 1 : 0)) {  // else nothing can be held (one block is a minimum)
      const int64_t later = hide_q_shift_ * (a_ - next_q_) + hide_kv_shift_ * (b_ - next_kv_) +
                            hide_q_partial_ * rows_.SendsLeft() +
                            hide_kv_partial_ * cols_.SendsLeft();
      const int64_t usable = forced + optional;
      int64_t target = 0;  // blocks this step computes, forced ones included
      if (usable >= later && usable - later >= BlocksToHide(comm_now)) {
        target = usable - later;  // enough for every step: cover this one, keep the rest for later
      } else {
        // Too few to hide everything: a block hides as much wherever it runs, so never spend
        // more on this step than its communication lasts (a 2.5-block hop takes 2 blocks, not 3).
        target = static_cast<int64_t>(std::floor(comm_now / block_ + kEps));
      }
      target = std::max<int64_t>(target, 1);  // every step makes progress
      hold = optional - std::clamp<int64_t>(target - forced, 0, optional);
    }
    step.compute.reserve(static_cast<size_t>(forced + optional - hold));
    if (hold == 0 && optional == 0) {
      heap_.clear();  // only stale keys left (the forced lines took every usable block)
    } else if (hold == 0) {
      // Everything usable runs (the common case: the forward and the uncached backward); no
      // ordering structure needed.
      ForEachFresh([&](int32_t k, int32_t l) {
        if (!IsComputed(k, l)) Compute(k, l, s, step);
      });
      for (const int32_t key : heap_) {
        const LocalBlock blk = BlockOf(key);
        if (!IsComputed(blk.q, blk.kv)) Compute(blk.q, blk.kv, s, step);
      }
      heap_.clear();
    } else {
      ForEachFresh([&](int32_t k, int32_t l) {
        if (IsComputed(k, l)) return;  // with a forced line
        heap_.push_back(Key(k, l));
        std::push_heap(heap_.begin(), heap_.end(), std::greater<>());
      });
      for (int64_t left = optional - hold; left > 0;) {
        std::pop_heap(heap_.begin(), heap_.end(), std::greater<>());
        const LocalBlock blk = BlockOf(heap_.back());
        heap_.pop_back();
        if (IsComputed(blk.q, blk.kv)) continue;  // computed as part of a forced line
        Compute(blk.q, blk.kv, s, step);
        --left;
      }
    }
    // The step's blocks run in chain order too, so that the line whose partial leaves next is
    // ready first (with a 1 x n tile: Ring's order, the own shard last).
    const auto chain_order = [this](const LocalBlock& x, const LocalBlock& y) {
      return Key(x.q, x.kv) < Key(y.q, y.kv);
    };
    if (!std::is_sorted(step.compute.begin(), step.compute.end(), chain_order)) {
      std::sort(step.compute.begin(), step.compute.end(), chain_order);
    }
    return step;
  }

  const GreedyOptions& o_;
  int32_t a_, b_;
  std::vector<int32_t> q_ready_, kv_ready_;   // step from which slot is usable
  std::vector<int32_t> row_left_, col_left_;  // blocks not yet computed per line
  std::vector<int32_t> row_done_, col_done_;  // step of the line's last block
  std::vector<uint8_t> computed_;             // block (k, l) at k*b + l
  int32_t next_q_ = 1, next_kv_ = 1;          // next slot a shift delivers
  Chain rows_, cols_;
  bool rows_primary_ = true;
  int64_t blocks_left_ = 0;
  double block_ = 1;
  int64_t hide_q_shift_ = 0, hide_kv_shift_ = 0, hide_q_partial_ = 0,
          hide_kv_partial_ = 0;             // BlocksToHide
  std::vector<int32_t> row_key_, col_key_;  // Key's terms per Q slot and per KV slot
  struct Rect {                             // blocks [q0, q1) x [kv0, kv1)
    int32_t q0 = 0, q1 = 0, kv0 = 0, kv1 = 0;
  };
  Rect fresh_[2];              // the blocks that became usable at this step
  std::vector<int32_t> heap_;  // keys of blocks held back (min-heap; stale keys of blocks
                               // computed with a forced line are skipped when popped)
  int64_t usable_left_ = 0;    // usable blocks not yet computed
  int32_t usable_q_ = 0, usable_kv_ = 0;  // the usable rectangle
};

}  // namespace

std::vector<MeshStep> GreedySchedule(const GreedyOptions& options) {
  if (options.a < 1 || options.b < 1) return {};
  return Builder(options).Run();
}

}  // namespace meshplan::planner::mesh
