// A rank's program in the form the replay reads (issue 15): 16 bytes per op, the ops' initial
// states and the dependents, made from the rank's program alone (no topology, no other rank), so
// that the expansion can hand each rank's program over as soon as it is complete and have it
// replaced by this form at once: the 72-byte Ops of a large schedule, or of its timing view,
// never all sit in memory (4096 ranks: 18M view ops, 1.3 GB of them).
#pragma once

#include <bit>
#include <cstdint>
#include <vector>

#include "core/base/status.h"
#include "core/plan/schedule.h"
#include "simulator/sim_time.h"

namespace meshplan::sim {

inline constexpr int kReplayStreams = 4;
inline constexpr int64_t kNoOp = -1;  // packed (rank, op) of no op

// What the replay reads of an op. The times are derived at start from these and the topology
// (the same expressions, in the same order, that the replay evaluated before: bit-identical).
struct ReplayOp {
  // Compute: FLOPs (Op::flops); merge: bytes of the partial it folds in (its largest received
  // dependency's bytes); messages and collectives: bytes (Op::bytes).
  double value = 0;
  // Send/Recv: the peer; collectives: the group; compute: Op::cut_rows_per_pair's bits
  // (cut_rows_per_pair()).
  int32_t peer_or_group = -1;
  OpKind kind = OpKind::kCompute;
  uint8_t stream_phase = 0;  // stream in the low 2 bits, phase in bit 2
  uint16_t kernels = 1;      // Op::kernels
  StreamId stream() const { return static_cast<StreamId>(stream_phase & 3); }
  Phase phase() const { return static_cast<Phase>(stream_phase >> 2); }
  float cut_rows_per_pair() const { return std::bit_cast<float>(peer_or_group); }
};
static_assert(sizeof(ReplayOp) == 16);

// Everything the replay tracks per op, packed into 32 aligned bytes so that one event touches
// one cache line of it (the replay is bound by cache misses across ranks).
struct alignas(32) OpState {
  SimTime start = 0;
  SimTime end = 0;
  int64_t cause = kNoOp;  // packed op whose completion set this op's end, or kNoOp
  int32_t deps_left = 0;
  // The op after this one on its stream, or -1: read where this op completes (its OpState is in
  // cache then), so advancing a stream does not load a separate per-stream list.
  int32_t next_on_stream = -1;
};
static_assert(sizeof(OpState) == 32);

// An op's count of deps not yet complete, 2 bytes per op in an array of its own, so that
// releasing the many dependents of one op (a received KV slot releases up to a = 128 blocks)
// touches a few cache lines of this array instead of one 32-byte OpState each (issue 15's profile:
// that decrement was the replay's largest cost). Counts of kManyDeps and more stay kManyDeps here
// and are counted in OpState::deps_left, which always holds the exact initial count.
using DepCount = uint16_t;
inline constexpr DepCount kManyDeps = 0xFFFF;

struct ReplayProgram {
  std::vector<ReplayOp> ops;
  std::vector<OpState> op;      // initial states: deps_left and next_on_stream set
  std::vector<DepCount> waits;  // per op: min(deps, kManyDeps) (see DepCount)
  std::vector<int32_t> dependents_begin, dependents;        // CSR: ops that list op i as a dep
  int32_t stream_first[kReplayStreams] = {-1, -1, -1, -1};  // per stream, its first op or -1
  // Per op, the ring-step partial bytes of a compute op (Op::bytes); empty when no op has any
  // (every scheme but the ring family), so other programs pay nothing for it.
  std::vector<double> partial_bytes;
  // Per op, those of them merged through a slice (Op::sliced_bytes); empty when no op has any.
  std::vector<double> sliced_bytes;
};

// The replay form of rank `rank`'s program in a schedule of `num_ranks` ranks. Errors (one line,
// naming rank and op): deps out of range or not pointing back, a peer out of range. Collective
// groups are checked by the replay (it knows the groups).
Result<ReplayProgram> MakeReplayProgram(const RankProgram& program, int64_t rank,
                                        int64_t num_ranks);

}  // namespace meshplan::sim
