#include "core/base/dtype.h"

#include <algorithm>
#include <cctype>

namespace meshplan {

int BytesPerElement(DType dtype) {
  switch (dtype) {
    case DType::kBf16:
    case DType::kFp16:
      return 2;
    case DType::kFp32:
      return 4;
    case DType::kFp8:
      return 1;
  }
  return 2;
}

std::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kBf16:
      return "bf16";
    case DType::kFp16:
      return "fp16";
    case DType::kFp32:
      return "fp32";
    case DType::kFp8:
      return "fp8";
  }
  return "bf16";
}

Result<DType> ParseDType(std::string_view text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (DType d : {DType::kBf16, DType::kFp16, DType::kFp32, DType::kFp8}) {
    if (lower == DTypeName(d)) return d;
  }
  return Status::Invalid("unknown dtype '" + std::string(text) +
                         "' (expected bf16, fp16, fp32 or fp8)");
}

}  // namespace meshplan
