// Mesh-Attention's greedy step schedule, in local indices. All ranks run the same schedule, so
// the sends and receives of neighbours pair up (docs/mesh-attention.md explains every rule).
//
// A rank's tile has Q slots 0..a-1 (Q#k) and KV slots 0..b-1 (KV#l); slot 0 of each is local at
// the start. A "shift" is one step of a ring in one dimension: the k-th Q shift forwards Q#(k-1)
// to the Q-send peer and receives Q#k from the Q-recv peer (likewise KV). Data received by a
// shift started at step s is usable from step s+1 (the paper's convention).
//
// Partials (forward: O+LSE per Q slot; backward: dQ per Q slot and dK+dV per KV slot) are
// reduced along their group by a chain that follows the ring direction: a rank's partial of Q
// slot k, sent to its Q-send peer, becomes that peer's slot k+1 (k = a-1 reaches the owner).
//   owner-last:  sends slots 1..a-1 (a-1 hops); the owner keeps its own partial and merges last.
//   owner-first: sends slots 0..a-1 (a hops); the owner's partial leaves first, the total
//                comes back (the paper's step table).
// A partial of slot k may be sent once all its blocks are computed and the incoming partial for
// slot k (from the recv peer, which sent it as its slot k-1) has been merged.
#pragma once

#include <cstdint>
#include <vector>

#include "core/plan/plan.h"
#include "core/plan/schedule.h"

namespace meshplan::planner::mesh {

struct LocalBlock {
  int32_t q = 0;   // Q slot
  int32_t kv = 0;  // KV slot
};

enum class ShiftKind : uint8_t { kNone, kQ, kKV };

struct MeshStep {
  std::vector<LocalBlock> compute;  // blocks computed during this step
  ShiftKind shift = ShiftKind::kNone;
  int32_t shift_slot = -1;                // the slot this shift delivers (Q#k or KV#l)
  std::vector<int32_t> q_partial_sends;   // Q slots whose partial (O+LSE or dQ) is sent this step
  std::vector<int32_t> kv_partial_sends;  // KV slots whose partial dK+dV is sent this step
};

// Relative costs used to decide how much computation to hold back to hide a later shift.
// Only ratios matter. Defaults describe the balanced case (one block hides one shift).
struct StepCosts {
  double block = 1;       // one block
  double q_shift = 1;     // one Q-dimension shift (forward: Q; backward: Q+dO+LSE+D or dO+LSE+D)
  double kv_shift = 1;    // one KV shift
  double q_partial = 1;   // one Q-side partial send (O+LSE or dQ)
  double kv_partial = 1;  // one dK+dV partial send
};

struct GreedyOptions {
  int64_t a = 1;
  int64_t b = 1;
  Phase phase = Phase::kForward;
  ReduceChain chain = ReduceChain::kOwnerLast;
  // Backward with the forward's KV cached: every KV slot is present from step 0, so there are no
  // KV shifts. (Q-dimension shifts always remain in the backward: dO, LSE and D were not known
  // during the forward; caching Q only makes those shifts smaller, which `costs` expresses.)
  bool kv_present = false;
  StepCosts costs;
};

// The step schedule. Every block (k, l) appears in exactly one step's compute, after the shifts
// that deliver Q#k and KV#l; every partial send obeys the chain rule above.
std::vector<MeshStep> GreedySchedule(const GreedyOptions& options);

}  // namespace meshplan::planner::mesh
