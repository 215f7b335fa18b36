// Chrome trace-event JSON for a simulated schedule, viewable in Perfetto (ui.perfetto.dev) and
// chrome://tracing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/plan/schedule.h"
#include "simulator/simulate.h"

namespace meshplan::sim {

// The object form {"traceEvents":[...],"displayTimeUnit":"ns"} with
//   - one process per rank: pid = rank, "M" metadata process_name "rank R (GPU G)" and
//     process_sort_index R;
//   - one thread per stream the rank uses: tid = the StreamId value (0 compute, 1 send, 2 recv,
//     3 collective), "M" metadata thread_name with StreamName();
//   - exactly one complete event ("ph":"X") per op, ts and dur in microseconds from
//     result.op_times, name such as "compute Q3xKV6", "merge O+LSE Q3", "send K+V -> 5",
//     "recv K+V <- 5", "all-to-all Q+K+V"; cat = OpKindName; args {op, bytes, flops, peer, step,
//     phase} (peer and step are -1 when they do not apply; phase is "fwd" or "bwd").
// `only_ranks` (ascending, each a rank of the schedule) limits the trace to those ranks' processes
// and ops; empty: every rank.
// REQUIRES: result.op_times[r].size() == schedule.ranks[r].ops.size() for every rank (replay with
// SimOptions::record_op_times) and rank_to_gpu.size() == schedule.ranks.size().
std::string ChromeTrace(const Schedule& schedule, const SimResult& result,
                        const std::vector<int64_t>& rank_to_gpu,
                        const std::vector<int64_t>& only_ranks = {});

// Ranks a trace holds unless told otherwise (SimulateFlags --trace-ranks): a 1024-rank Mesh trace
// of every rank is about 560 MB; 64 ranks keep it near 35 MB.
inline constexpr int64_t kDefaultTraceRanks = 64;

// The event name used for `op` in the trace (exposed for tests and reports).
std::string TraceOpName(const Op& op);

}  // namespace meshplan::sim
