// `meshplan calibrate --format json`: the calibrated cluster as `topo show --format json` gives
// it, the fit's residuals, every kernel and message sample (measured against the model), and
// the topology file's TOML text (what `-t` reads), in one JSON object.
#pragma once

#include <string>

#include "executor/calibration/calibration.h"

namespace meshplan::report {

// {"topology": {...TopologyJson}, "fit": {"kernel_median_error", "kernel_max_error",
// "message_median_error", "message_max_error"} (|model / measured - 1|), "kernels": [{"piece",
// "n", "pass", "flops", "measured_s", "model_s"}], "messages": [{"bytes", "measured_s",
// "model_s"}], "sharing": {"ranks", "alone_s", "ends_s", "spread", "end_lag_s"}, "toml": TEXT},
// ending in a newline.
std::string CalibrationJson(const exec::CalibrationResult& result, const std::string& toml);

}  // namespace meshplan::report
