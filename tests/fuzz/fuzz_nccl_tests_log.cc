// nccl-tests logs (core/cluster/nccl_tests_log.h, `topo from-nccl-tests`): any bytes give a result
// with at least one row and a finite busbw >= 0, or one error line.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/cluster/nccl_tests_log.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto result = meshplan::ParseNcclTestsLog(text, "all_reduce.log");
  if (!result.ok()) {
    meshplan::fuzz::CheckOneLine(result.status());
    return 0;
  }
  meshplan::fuzz::Check(result->rows >= 1, "a result without rows");
  meshplan::fuzz::Check(std::isfinite(result->peak_busbw_GBps) && result->peak_busbw_GBps >= 0,
                        "a busbw that is not a finite number >= 0");
  meshplan::fuzz::Check(result->hosts <= result->ranks || result->ranks == 0,
                        "more hosts than ranks");
  return 0;
}
