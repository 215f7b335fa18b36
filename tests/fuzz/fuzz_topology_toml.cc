// Topology files (core/cluster/topology_toml.h): any bytes give a topology or one error line; a
// topology that parses writes back to a file that parses again to the same text.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/cluster/topology_toml.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto topology = meshplan::ParseTopologyToml(text, "fuzz.toml");
  if (!topology.ok()) {
    meshplan::fuzz::CheckOneLine(topology.status());
    return 0;
  }
  const std::string written = meshplan::TopologyToToml(*topology);
  auto again = meshplan::ParseTopologyToml(written, "written.toml");
  meshplan::fuzz::Check(again.ok(), "a written topology does not parse again");
  meshplan::fuzz::Check(meshplan::TopologyToToml(*again) == written,
                        "a topology does not round-trip");
  return 0;
}
