#include "report/format/fabric_text.h"

#include <cstdio>

namespace meshplan::report {

std::string FabricsText(const NetworkLevel& level) {
  if (level.fabrics.empty()) return "";
  std::string out = " (";
  for (size_t i = 0; i < level.fabrics.size(); ++i) {
    const LevelFabric& f = level.fabrics[i];
    const long long units = static_cast<long long>(f.UnitCount());
    char buffer[128];
    std::snprintf(buffer, sizeof buffer, "%s %g GB/s on %lld unit%s", f.name.c_str(),
                  f.bandwidth_bytes_per_s / 1e9, units, units == 1 ? "" : "s");
    out += (i ? "; " : "") + std::string(buffer);
  }
  return out + ")";
}

}  // namespace meshplan::report
