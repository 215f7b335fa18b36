// A predicted (simulated) and a measured timeline side by side (exec::RunTimeline, both defined
// as in executor/timing/timeline.h): per rank and per op class, each pair with its signed error
// (measured - predicted) / predicted; as text tables and as JSON. Used by `meshplan execute`.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "core/base/json_writer.h"
#include "executor/timing/timeline.h"

namespace meshplan::report {

// Ranks listed one by one in the table up to this many; beyond, only the kRanksShownWhenMany
// with the largest |error| in busy time (JSON always lists every rank).
inline constexpr size_t kMaxRanksListed = 16;
inline constexpr size_t kRanksShownWhenMany = 3;

// Signed error of `measured` against `predicted` in percent (exec::ErrorPercent); absent when
// `predicted` is not positive, where a relative error means nothing.
std::optional<double> ErrorPct(double measured, double predicted);

// ErrorPct as a table cell of at most 7 characters (below 1e10%): one decimal below 1000%
// ("+3.4%", "-100.0%"), whole percents below 100000% ("+14767%"), then two significant digits
// ("+2.5e5%"); "n/a" when absent. Times measured on CPUs against a GPU cluster's prediction are
// off by factors of thousands, where only the first digits matter, and the per-rank table must
// stay within 100 columns.
std::string ErrorCell(std::optional<double> percent);

// The ranks of the per-rank table, in the order shown: every rank when there are at most
// kMaxRanksListed, else the kRanksShownWhenMany with the largest |ErrorPct| of busy time
// (RankTimes::BusyS; ranks without an error last, ties by rank). Ranks present in both.
std::vector<size_t> RanksShown(const exec::RunTimeline& predicted,
                               const exec::RunTimeline& measured);

// Whether the comparison tables give each pair's error: kWithErrors where the measured times are
// meant to match the prediction; kSideBySide where they cannot (CPU ranks against a GPU
// cluster's prediction), so the tables show the two without errors.
enum class Errors { kWithErrors, kSideBySide };

// "per rank ..." heading, one row per rank of RanksShown: compute, exposed comm, idle, each as
// predicted, measured, error (no error under kSideBySide); a note when some ranks are left out.
// Width <= 100 columns while every time is below 1000 s (FormatSeconds: at most 9 characters).
std::string RenderRankComparison(const exec::RunTimeline& predicted,
                                 const exec::RunTimeline& measured,
                                 Errors errors = Errors::kWithErrors);

// "per op class ..." heading, one row per class with ops in either timeline: ops, predicted,
// measured, error (none under kSideBySide); a line saying why when either timeline has no op
// classes.
std::string RenderOpClassComparison(const exec::RunTimeline& predicted,
                                    const exec::RunTimeline& measured,
                                    Errors errors = Errors::kWithErrors);

// Inside an open object: "ranks": [{"rank", "compute_s", "exposed_comm_s", "idle_s", "busy_s"}]
// and "op_classes": [{"class", "ops", "time_s"}] (every class, in OpClass order; null when absent).
void TimelineDetailJson(JsonWriter& j, const exec::RunTimeline& t);

// {"time", "compute", "exposed_comm", "idle" (of the means), "ranks": [{"rank", "compute",
// "exposed_comm", "idle", "busy"}], "op_classes": [{"class", "time"}] (null when either timeline
// has none)}: ErrorPct of each measured value against its prediction, null when absent. `time`
// compares `measured_time_s` (the median of the timed runs) with predicted.run_s.
void ErrorsJson(JsonWriter& j, const exec::RunTimeline& predicted,
                const exec::RunTimeline& measured, double measured_time_s);

}  // namespace meshplan::report
