// `meshplan calibrate --format json`: the calibrated cluster as `topo show --format json` gives
// it, the fit's residuals, every kernel and message sample (measured against the model), and
// the topology file's TOML text (what `-t` reads), in one JSON object.
#pragma once

#include <string>
#include <vector>

#include "capacity/draw_range.h"
#include "core/cluster/topology.h"
#include "executor/calibration/calibration.h"

namespace meshplan::report {

// {"topology": {...TopologyJson}, "fit": {"kernel_median_error", "kernel_max_error",
// "message_median_error", "message_max_error"} (|model / measured - 1|), "kernels": [{"piece",
// "n", "pass", "flops", "measured_s", "model_s"}], "messages": [{"bytes", "measured_s",
// "model_s"}], "sharing": {"ranks", "alone_s", "ends_s", "spread", "end_lag_s"}, "toml": TEXT},
// ending in a newline.
std::string CalibrationJson(const exec::CalibrationResult& result, const std::string& toml);

// `calibrate --draws N --format json`: {"topology": {...the combined file's TopologyJson},
// "draw_range": {"low", "high", "plans"}, "draws": [{...each draw's TopologyJson}], "toml": TEXT
// (the combined file)}, ending in a newline. Each draw's samples stay in its own process: run
// `calibrate --format json` alone to see one calibration's.
std::string CalibrationDrawsJson(const Topology& combined, const capacity::DrawRange& range,
                                 const std::vector<Topology>& draws, const std::string& toml);

}  // namespace meshplan::report
