// .npy files (executor/io/npy.h): any bytes give an array whose values match its shape, or one
// error line.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "executor/io/npy.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto array = meshplan::exec::ParseNpy(bytes, "fuzz.npy");
  if (!array.ok()) {
    meshplan::fuzz::CheckOneLine(array.status());
    return 0;
  }
  size_t count = 1;
  for (int64_t dim : array->shape) {
    meshplan::fuzz::Check(dim >= 0, "a negative dimension");
    count *= static_cast<size_t>(dim);
  }
  meshplan::fuzz::Check(count == array->values.size(), "the values do not match the shape");
  return 0;
}
