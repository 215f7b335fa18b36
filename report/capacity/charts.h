// The capacity-planning charts: sweep rows and simulated schedules turned into plot:: charts,
// and the set of SVG files `meshplan sweep --plot DIR` writes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "capacity/sweep.h"
#include "core/base/status.h"
#include "core/plan/schedule.h"
#include "report/svg/svg_plot.h"
#include "simulator/simulate.h"

namespace meshplan::report {

// The charts draw the rows of a capacity-planning sweep.
using capacity::SweepRow;

// The time a row's plan takes per step: the simulated time when the sweep replayed it, else the
// planner's estimate.
double RowTime(const SweepRow& row);

// Time per step (ms, log scale) against GPU count (log2) at `seq_len` tokens: one series per
// scheme present in `rows` (scheme order, so colours match the other sweep charts), points only
// where the scheme's best plan is valid and fits in memory. With several base topologies (names
// without their "@<gpus>" suffix) there is one series per scheme and topology. A scheme without
// any point keeps its (empty) series, named "<scheme> (does not fit)" or "<scheme> (no valid
// plan)".
plot::LineChart TimeVsGpus(const std::vector<SweepRow>& rows, int64_t seq_len);

// Time (ms, log scale) against sequence length (log2) on `gpus` GPUs: one series per scheme (and
// topology), valid fitting plans only. With a model (SweepRow::all_layers_s) the time is all its
// attention layers of one training step, else one layer's; RowTime's simulated time, when
// replayed, scales the all-layers figure by simulated / estimated.
plot::LineChart TimeVsSeq(const std::vector<SweepRow>& rows, int64_t gpus);

// Exposed communication share of the step time (%) against sequence length (log2) on `gpus`
// GPUs: one series per scheme, valid fitting plans only.
plot::LineChart CommShareVsSeq(const std::vector<SweepRow>& rows, int64_t gpus);

// Rows: sequence lengths (ascending; drawn bottom to top), columns: GPU counts (ascending). A
// cell names the scheme with the lowest RowTime among valid fitting rows of that point (-1 when
// none; equal times go to the earlier scheme), its note the time ("45.6 ms"), and its ties the
// other schemes within kTieRelativeTolerance (0.5%) of that time (report/capacity/near_ties.h),
// fastest first, each with its time. Categories: every scheme present in `rows`.
plot::CategoryMap BestSchemeMap(const std::vector<SweepRow>& rows);

// Lane r is "rank r"; one bar per op of ranks [0, max_lanes) (max_lanes <= 0: all ranks), in ms.
// Categories: "compute fwd", "compute bwd" (compute-stream ops: computes and merges), "send/recv",
// "collective". Needs result.op_times (SimOptions::record_op_times); without them no bars are
// drawn and the title says why. The title names the scheme, rank count and simulated time, and
// says when only the first max_lanes ranks are shown.
plot::Timeline SimulatedTimeline(const Schedule& schedule, const sim::SimResult& result,
                                 int max_lanes);

// Writes into `dir` (created when missing), each file atomically:
//   time-vs-gpus.svg         TimeVsGpus at the largest sequence length in rows;
//   time-vs-gpus-<seq>.svg   TimeVsGpus at each sequence length ("32K", "1M"), when there are
//                            2 to 8 of them;
//   time-vs-seq.svg          TimeVsSeq on the largest GPU count;
//   time-vs-seq-<gpus>.svg   TimeVsSeq on each GPU count, when there are 2 to 8 of them;
//   comm-share-vs-seq.svg    CommShareVsSeq on the largest GPU count;
//   best-scheme.svg          BestSchemeMap.
// A line chart over one value of its x axis would be a column of points: the time-vs-gpus charts
// are left out when the sweep has one GPU count, the time-vs-seq and comm-share charts when it
// has one sequence length. Line charts of an earlier sweep left in `dir` (time-vs-gpus*.svg,
// time-vs-seq*.svg, comm-share-vs-seq.svg) that this sweep does not draw are removed, so the
// directory shows this sweep's charts only.
// Errors: no rows (invalid input); a directory or file that cannot be written (I/O, naming it).
Status WriteSweepPlots(const std::vector<SweepRow>& rows, const std::string& dir);

}  // namespace meshplan::report
