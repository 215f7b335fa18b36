// Dense host tensors of attention: [batch, tokens, heads, dim], row-major (dim fastest).
// LSE and D use dim = 1.
#pragma once

#include <cstdint>
#include <vector>

namespace meshplan::exec {

template <typename T>
struct Tensor {
  int64_t batch = 0, tokens = 0, heads = 0, dim = 0;
  std::vector<T> data;

  Tensor() = default;
  Tensor(int64_t b, int64_t s, int64_t h, int64_t d)
      : batch(b), tokens(s), heads(h), dim(d), data(static_cast<size_t>(b * s * h * d), T(0)) {}
  int64_t Index(int64_t b, int64_t s, int64_t h, int64_t e) const {
    return ((b * tokens + s) * heads + h) * dim + e;
  }
  T& at(int64_t b, int64_t s, int64_t h, int64_t e) {
    return data[static_cast<size_t>(Index(b, s, h, e))];
  }
  const T& at(int64_t b, int64_t s, int64_t h, int64_t e) const {
    return data[static_cast<size_t>(Index(b, s, h, e))];
  }
  int64_t size() const { return static_cast<int64_t>(data.size()); }
};

using TensorF = Tensor<float>;
using TensorD = Tensor<double>;

// The whole problem in the global (unsharded) layout.
template <typename T>
struct AttentionTensors {
  Tensor<T> q, k, v;  // inputs: q [B,S,Hq,d], k and v [B,S,Hkv,d]
  Tensor<T> d_o;      // input of the backward: dO [B,S,Hq,d]
  Tensor<T> o,
      lse;  // forward outputs: O [B,S,Hq,d], LSE [B,S,Hq,1] (natural log, of scaled scores)
  Tensor<T> dq, dk, dv;  // backward outputs
};

// The same tensor in another element type (each value converted as static_cast does).
template <typename To, typename From>
Tensor<To> Converted(const Tensor<From>& t) {
  Tensor<To> out(t.batch, t.tokens, t.heads, t.dim);
  for (size_t i = 0; i < t.data.size(); ++i) out.data[i] = static_cast<To>(t.data[i]);
  return out;
}
inline TensorF ToFloat(const TensorD& t) { return Converted<float>(t); }
inline TensorD ToDouble(const TensorF& t) { return Converted<double>(t); }

}  // namespace meshplan::exec
