// Sweep files (capacity/sweep_file.h): any bytes give settings or one error line naming the file.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "capacity/sweep_file.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto settings = meshplan::capacity::ParseSweepToml(text, "fuzz.toml");
  if (!settings.ok()) {
    meshplan::fuzz::CheckOneLine(settings.status());
    meshplan::fuzz::Check(settings.status().message().rfind("fuzz.toml", 0) == 0,
                          "an error does not name the file");
  }
  return 0;
}
