// `calibrate --draws N`: several calibrations of one machine combined into one file. A
// calibration is one draw of a machine whose speed moves by the minute and by the process (on the
// 2-core development VM, five calibrations' predictions of the same plans spread 13-56% at the
// median, while each was within 4-8% of their median: docs/fidelity.md, "Draws"). The median of
// each fitted value over the draws is robust to the one draw that came out slow or fast.
#pragma once

#include <vector>

#include "core/base/status.h"
#include "core/cluster/topology.h"

namespace meshplan::exec {

// One topology from `draws` (calibrations of one machine, as Calibrate fits them): the first
// draw's, with every value Calibrate fits replaced by its median over the draws:
//   - the kernel rate at each block size (peak x efficiency), the peak then being the fastest of
//     those medians and each efficiency its median rate over it (so that the curve stays a curve
//     of rates that were measured, not a product of two medians);
//   - backward_rate_ratio, cut_row_extra_pairs, pair_overhead_flops, hbm_GBps, concurrent_kernels,
//     the lag's time and fraction; the innermost level's latency and bandwidth;
//   - sharing: the verdict most draws gave (the first draw's on a tie);
//   - [calibration]: the median reference time and kernel residuals, the largest speed spread and
//     other processes' share (the most disturbed draw is the one a caveat is about).
// `draws` and the draws' range are not set here: capacity/draw_range.h measures the range with
// the planner, and the two go together (Topology::Validate).
// kInvalidInput when there are no draws, or when draws differ in what was measured (ranks, head
// dim, block sizes, levels): they are then not draws of one calibration.
Result<Topology> CombineDraws(const std::vector<Topology>& draws);

}  // namespace meshplan::exec
