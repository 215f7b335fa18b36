// The text of a progress bar (tools/progress_bar.h draws it on a terminal): pure functions of the
// counts and the time so far, so they are tested without a terminal.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace meshplan::report {

inline constexpr int kProgressBarCells = 24;

// "h:mm:ss" from an hour up, else "m:ss" (seconds rounded down; negative or not finite: 0:00).
std::string FormatClock(double seconds);

// "meshplan: LABEL [#########               ] 12/32   37%  0:41, about 1:08 left": the cells
// filled in proportion to done / total (rounded down), the percentage rounded down, the time so
// far, and the time left as the time so far times (total - done) / done, the rate so far (absent
// before the first step and after the last, or when `time_left` is false: for steps of unequal
// lengths). `done` is clamped to [0, total].
std::string ProgressBarText(std::string_view label, int64_t done, int64_t total, double elapsed_s,
                            bool time_left = true);

}  // namespace meshplan::report
