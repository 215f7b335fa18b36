// The tiny schedules that EngineCalibrationTarget (engine_calibration.h) runs through the execution
// engine: each is a workload, a hand-built Schedule (core/plan/schedule.h) and, per rank, the ops
// whose engine timings (OpTiming) make the measurement. Plain data; nothing here runs or times
// anything.
//
// A block's token positions come from the schedule's layout, whose shards partition the sequence:
// a block's query and key rows are one shard each, so they are either the same positions (a rank's
// own block) or disjoint ones. Rank r's input is shard r only; a block over two shards gets the
// shard it lacks by a message before it computes.
//
// The pieces (calibration.h) as blocks:
//   full:     full mask, contiguous shards of n tokens; rank r computes its own block (r, r).
//   diagonal: causal, the same shards and blocks: queries and keys at the same positions.
//   partial:  the piece's queries [n/2, 3n/2) and keys [0, n) overlap, which no two shards do.
//             Its 180-degree rotation is a block over two shards: queries [n, 2n) against keys
//             [0, n) under a causal window of 3n/2 + 1 keys, where query n + i sees keys
//             [max(0, i - n/2), n): the same visible pairs (7n^2/8 + n/4 for even n) and cut rows
//             (n/2 - 1), as a run's window edge meets them. Every computing rank computes block
//             (1, 0) of contiguous shards.
//   chunked:  causal, four chunks of n/4 tokens per shard (a balanced layout with a chunk map made
//             here): shard 1 holds the piece's queries [n/2, n) u [3n/2, 2n), shard 0 its keys
//             [0, n/2) u [n, 3n/2); every computing rank computes block (1, 0).
// For two-shard blocks rank 0 sends K, V of shard 0 and rank 1 sends Q (and dO) of shard 1 to the
// other computing ranks; with one computing rank, rank 0 only sends (the run has two ranks).
#pragma once

#include <cstdint>
#include <vector>

#include "core/base/status.h"
#include "core/plan/schedule.h"
#include "core/workload/workload.h"
#include "executor/calibration/calibration.h"
#include "executor/device/kernel_args.h"

namespace meshplan::exec {

struct CalibrationRun {
  Workload workload;
  Schedule schedule;
  // Per rank, the ops whose timings are read, in program order (empty: the rank only helps).
  std::vector<std::vector<uint32_t>> timed;
};

// `ranks` ranks each compute `repeats` n x n blocks of `piece` back to back (`heads` heads of
// dimension `head_dim`); timed: those blocks' forward ops, or, for `backward`, one forward block
// (for its LSE) followed by `repeats` timed backward ops. kInvalidInput for n not a positive
// multiple of 4, ranks < 1, repeats < 1. `type` sizes the messages' bytes.
Result<CalibrationRun> KernelRun(BlockPiece piece, int64_t n, int64_t heads, int64_t head_dim,
                                 bool backward, int ranks, int repeats, InputType type);

// Two ranks of n-token shards: rank 1 computes its accumulator of shard 1 and then folds in
// `merges` partials (O and LSE of n rows, `heads` heads, fp32) that rank 0 computes for shard 1 and
// hands over; timed: rank 1's merge ops. The blocks that make the partials are cheap (a window of
// one key: every query sees itself only), so the run costs the merges and little else.
Result<CalibrationRun> MergeRun(int64_t n, int64_t heads, int64_t head_dim, int merges,
                                InputType type);

// Two ranks; rank 0 sends rank 1 its K shard `messages` times, each message `bytes` rounded to
// whole rows of `head_dim` elements of `type` (at least one row) and issued after the one before
// it, so that each is an exchange step of its own (timed alone); timed: the send and receive ops,
// in pairs (send i on rank 0, receive i on rank 1).
Result<CalibrationRun> MessageRun(int64_t bytes, int64_t head_dim, int messages, InputType type);

// The bytes of one message of MessageRun(bytes, head_dim, ...): whole rows.
int64_t MessageRunBytes(int64_t bytes, int64_t head_dim, InputType type);

}  // namespace meshplan::exec
