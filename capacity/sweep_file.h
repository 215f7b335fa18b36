// Sweep files: the settings of `meshplan sweep` in TOML (docs/capacity-planning.md, Sweep file).
#pragma once

#include <string>
#include <string_view>

#include "capacity/sweep_settings.h"
#include "core/base/status.h"

namespace meshplan::capacity {

// Reads the sweep file at `path` into the settings it sets (keys it leaves out stay unset).
// Topology paths are made relative to the file's directory. Unknown keys are errors; every error
// is one line "FILE: KEY: reason" (or "FILE: reason" when the file cannot be read or parsed).
Result<SweepSettings> ReadSweepFile(const std::string& path);
// The same for the text of a sweep file at `path` (which names it in errors and anchors its
// relative topology paths).
Result<SweepSettings> ParseSweepToml(std::string_view text, const std::string& path);

}  // namespace meshplan::capacity
