// Document-length files (core/sequence/mask.h): any bytes give positive lengths or one error line;
// the lengths then validate against their own sum without overflow, or are refused.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/sequence/mask.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto lengths = meshplan::ParseDocumentLengths(text, "docs.txt");
  if (!lengths.ok()) {
    meshplan::fuzz::CheckOneLine(lengths.status());
    return 0;
  }
  int64_t sum = 0;
  bool fits = true;
  for (int64_t length : *lengths) {
    meshplan::fuzz::Check(length > 0, "a document length is not positive");
    fits = fits && !__builtin_add_overflow(sum, length, &sum);
  }
  const meshplan::Mask mask = meshplan::Mask::Documents(*lengths);
  const meshplan::Status status = meshplan::ValidateMask(mask, fits ? sum : 1);
  meshplan::fuzz::Check(status.ok() == fits,
                        "the lengths' own sum does not validate (or an overflowing one does)");
  if (fits && sum <= (int64_t{1} << 16)) {
    // Small enough to count: every pair count is within the causal bound.
    const meshplan::PairCounter counter(mask, sum);
    meshplan::fuzz::Check(counter.Total() <= sum * (sum + 1) / 2,
                          "more pairs than causal attention has");
  }
  return 0;
}
