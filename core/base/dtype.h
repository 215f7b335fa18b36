// Element types of attention tensors.
#pragma once

#include <string>
#include <string_view>

#include "core/base/status.h"

namespace meshplan {

enum class DType { kBf16, kFp16, kFp32, kFp8 };

int BytesPerElement(DType dtype);
std::string_view DTypeName(DType dtype);
// Accepts "bf16", "fp16", "fp32", "fp8" (case-insensitive).
Result<DType> ParseDType(std::string_view text);

}  // namespace meshplan
