// Writing output files so that readers never see half of one.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"

namespace meshplan {

// Writes `contents` to a temporary file beside `path` and renames it over `path`.
// On failure nothing at `path` changes and the temporary file is removed.
Status WriteFileAtomically(const std::string& path, std::string_view contents);

}  // namespace meshplan
