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

uint16_t EncodeInput(InputType type, float x);
float DecodeInput(InputType type, uint16_t bits);
// x rounded to the nearest value of `type`.
inline float RoundToInput(InputType type, float x) { return DecodeInput(type, EncodeInput(type, x)); }

const char* InputTypeName(InputType type);  // "bf16", "fp16"

}  // namespace meshplan::exec
