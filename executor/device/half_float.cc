#include "executor/device/half_float.h"

#include <cmath>
#include <cstring>

namespace meshplan::exec {
namespace {

uint32_t Bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

float FromBits(uint32_t u) {
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

}  // namespace

uint16_t FloatToBf16(float x) {
  const uint32_t u = Bits(x);
  if (std::isnan(x)) return static_cast<uint16_t>((u >> 16) | 0x40);  // keep it a (quiet) NaN
  // bf16 is the top half of fp32: add half an ulp of the kept part, plus one when the kept part
  // is odd (ties to even), then truncate. Overflow rounds to infinity, as it should.
  const uint32_t rounding = 0x7FFF + ((u >> 16) & 1);
  return static_cast<uint16_t>((u + rounding) >> 16);
}

float Bf16ToFloat(uint16_t bits) { return FromBits(static_cast<uint32_t>(bits) << 16); }

uint16_t FloatToFp16(float x) {
  const uint32_t u = Bits(x);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000);
  const uint32_t abs = u & 0x7FFFFFFF;
  if (abs > 0x7F800000) return static_cast<uint16_t>(sign | 0x7E00);   // NaN
  if (abs >= 0x477FF000) return static_cast<uint16_t>(sign | 0x7C00);  // rounds to >= 65520: inf
  const int exponent = static_cast<int>(abs >> 23) - 127;
  if (exponent >= -14) {
    // Normal half: 10 mantissa bits kept of 23; round the 13 dropped bits to nearest even.
    const uint32_t mantissa = abs & 0x7FFFFF;
    uint32_t half = (static_cast<uint32_t>(exponent + 15) << 10) | (mantissa >> 13);
    const uint32_t dropped = mantissa & 0x1FFF;
    if (dropped > 0x1000 || (dropped == 0x1000 && (half & 1)))
      ++half;  // may carry into the exponent
    return static_cast<uint16_t>(sign | half);
  }
  if (exponent < -25) return sign;  // below half the smallest subnormal: zero
  // Subnormal half: value = m * 2^-24 with m < 1024. The full significand (with its implicit
  // one) is shifted right by the difference of exponents, rounding to nearest even.
  const uint32_t significand = (abs & 0x7FFFFF) | 0x800000;
  const int shift =
      -exponent - 14 + 13;  // 14..24 for exponents -15..-25 (plus the 13 fp32 extra bits)
  uint32_t half = significand >> shift;
  const uint32_t dropped = significand & ((1u << shift) - 1);
  const uint32_t midpoint = 1u << (shift - 1);
  if (dropped > midpoint || (dropped == midpoint && (half & 1))) ++half;
  return static_cast<uint16_t>(sign | half);
}

float Fp16ToFloat(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1F;
  const uint32_t mantissa = bits & 0x3FF;
  if (exponent == 0x1F) return FromBits(sign | 0x7F800000 | (mantissa << 13));
  if (exponent == 0) {
    const float value = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -value : value;
  }
  return FromBits(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

uint16_t EncodeInput(InputType type, float x) {
  return type == InputType::kBf16 ? FloatToBf16(x) : FloatToFp16(x);
}

float DecodeInput(InputType type, uint16_t bits) {
  return type == InputType::kBf16 ? Bf16ToFloat(bits) : Fp16ToFloat(bits);
}

void EncodeInputs(InputType type, const float* src, int64_t n, void* dst) {
  if (type == InputType::kFp32) {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
    return;
  }
  auto* out = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) out[i] = EncodeInput(type, src[i]);
}

float InputAt(InputType type, const void* data, int64_t i) {
  if (type == InputType::kFp32) return static_cast<const float*>(data)[i];
  return DecodeInput(type, static_cast<const uint16_t*>(data)[i]);
}

const char* InputTypeName(InputType type) {
  switch (type) {
    case InputType::kBf16:
      return "bf16";
    case InputType::kFp16:
      return "fp16";
    case InputType::kFp32:
      return "fp32";
  }
  return "?";
}

}  // namespace meshplan::exec
