// Size expressions (core/base/units.h ParseCount) and list/range expressions
// (capacity/sweep_lists.h): any text gives a positive value (a list of at most kMaxListValues) or
// one error line, in time proportional to its length.
#include <cstddef>
#include <cstdint>
#include <string>

#include "capacity/sweep_lists.h"
#include "core/base/units.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto count = meshplan::ParseCount(text);
  if (count.ok()) {
    meshplan::fuzz::Check(*count > 0, "a count is not positive");
  } else {
    meshplan::fuzz::CheckOneLine(count.status());
  }
  auto list = meshplan::capacity::ParseCountList(text, "--gpus");
  if (list.ok()) {
    meshplan::fuzz::Check(!list->empty() && list->size() <= meshplan::capacity::kMaxListValues,
                          "a list's size");
    for (int64_t v : *list) meshplan::fuzz::Check(v > 0, "a list value is not positive");
  } else {
    meshplan::fuzz::CheckOneLine(list.status());
  }
  return 0;
}
