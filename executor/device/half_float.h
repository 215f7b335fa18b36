// Host conversions between fp32 and the 16-bit input types of the GPU executor (bf16, fp16),
// rounding to nearest, ties to even, as the hardware conversions do. Used to build device inputs
// and to round reference inputs so a check compares like with like.
#pragma once

#include <cstdint>
#include <vector>

#include "executor/device/kernel_args.h"

namespace meshplan::exec {

uint16_t FloatToBf16(float x);
float Bf16ToFloat(uint16_t bits);
uint16_t FloatToFp16(float x);
float Fp16ToFloat(uint16_t bits);

// REQUIRES: a 16-bit type (bf16 or fp16).
uint16_t EncodeInput(InputType type, float x);
float DecodeInput(InputType type, uint16_t bits);
// x rounded to the nearest value of `type` (fp32: x itself).
inline float RoundToInput(InputType type, float x) {
  return type == InputType::kFp32 ? x : DecodeInput(type, EncodeInput(type, x));
}
// Writes n values as `type` to dst (InputBytes(type) bytes each).
void EncodeInputs(InputType type, const float* src, int64_t n, void* dst);
// Element i of an array of `type`.
float InputAt(InputType type, const void* data, int64_t i);

const char* InputTypeName(InputType type);  // "bf16", "fp16", "fp32"

}  // namespace meshplan::exec
