#include "executor/io/input_source.h"

#include <algorithm>

namespace meshplan::exec {
namespace {

constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ULL;

// splitmix64's output function (Steele, Lea and Flood 2014): a bijection of 64-bit words whose
// outputs for consecutive multiples of the golden ratio pass BigCrush.
uint64_t Mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

const TensorF& TensorOf(const AttentionTensors<float>& t, InputTensor which) {
  switch (which) {
    case InputTensor::kQ:
      return t.q;
    case InputTensor::kK:
      return t.k;
    case InputTensor::kV:
      return t.v;
    case InputTensor::kDO:
      break;
  }
  return t.d_o;
}

int64_t HeadsOf(const Workload& w, InputTensor which) {
  return which == InputTensor::kK || which == InputTensor::kV ? w.kv_heads : w.q_heads;
}

}  // namespace

void TensorInputSource::Row(InputTensor tensor, int64_t b, int64_t position, float* out) const {
  const TensorF& t = TensorOf(inputs_, tensor);
  const float* row = &t.at(b, position, 0, 0);
  std::copy_n(row, static_cast<size_t>(t.heads * t.dim), out);
}

double SeededInputValue(uint64_t seed, InputTensor tensor, uint64_t index) {
  // One splitmix64 stream per (seed, tensor): its state after `index + 1` steps, mixed.
  const uint64_t key = Mix64(Mix64(seed + kGolden) + static_cast<uint64_t>(tensor) * kGolden);
  const uint64_t bits = Mix64(key + (index + 1) * kGolden);
  const double unit = static_cast<double>(bits >> 11) * 0x1.0p-53;  // [0, 1), 53 bits
  return 2.0 * unit - 1.0;                                          // [-1, 1), exact
}

void SeededInputSource::Row(InputTensor tensor, int64_t b, int64_t position, float* out) const {
  const int64_t row = HeadsOf(workload_, tensor) * workload_.head_dim;
  const uint64_t first = static_cast<uint64_t>((b * workload_.seq_len + position) * row);
  for (int64_t i = 0; i < row; ++i) {
    out[i] = static_cast<float>(SeededInputValue(seed_, tensor, first + static_cast<uint64_t>(i)));
  }
}

AttentionTensors<float> MaterializeInputs(const Workload& w, const InputSource& source) {
  AttentionTensors<float> t;
  t.q = TensorF(w.batch, w.seq_len, w.q_heads, w.head_dim);
  t.k = TensorF(w.batch, w.seq_len, w.kv_heads, w.head_dim);
  t.v = TensorF(w.batch, w.seq_len, w.kv_heads, w.head_dim);
  if (HasBackward(w.pass)) t.d_o = TensorF(w.batch, w.seq_len, w.q_heads, w.head_dim);
  auto fill = [&](InputTensor which, TensorF& dst) {
    if (dst.size() == 0) return;
    for (int64_t b = 0; b < w.batch; ++b) {
      for (int64_t s = 0; s < w.seq_len; ++s) source.Row(which, b, s, &dst.at(b, s, 0, 0));
    }
  };
  fill(InputTensor::kQ, t.q);
  fill(InputTensor::kK, t.k);
  fill(InputTensor::kV, t.v);
  fill(InputTensor::kDO, t.d_o);
  return t;
}

}  // namespace meshplan::exec
