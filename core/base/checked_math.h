// Integer arithmetic on sizes read from users (files, flags) that reports overflow instead of
// wrapping: a product or sum that does not fit in int64 is std::nullopt, never undefined behaviour.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>

namespace meshplan {

// a * b, or nullopt when the exact result does not fit in int64.
inline std::optional<int64_t> CheckedMultiply(int64_t a, int64_t b) {
  int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) return std::nullopt;
  return product;
}

// a + b, or nullopt when the exact result does not fit in int64.
inline std::optional<int64_t> CheckedAdd(int64_t a, int64_t b) {
  int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) return std::nullopt;
  return sum;
}

// The product of `factors` (1 for none), or nullopt when it, or any partial product on the way,
// does not fit in int64.
inline std::optional<int64_t> CheckedProduct(std::initializer_list<int64_t> factors) {
  int64_t product = 1;
  for (int64_t f : factors) {
    const std::optional<int64_t> next = CheckedMultiply(product, f);
    if (!next) return std::nullopt;
    product = *next;
  }
  return product;
}

}  // namespace meshplan
