#include "executor/device/engine_outputs.h"

#include <algorithm>

#include "core/plan/schedule.h"

namespace meshplan::exec {
namespace {

TensorF* OutputFor(uint16_t bit, AttentionTensors<float>& out) {
  switch (bit) {
    case kTensorO:
      return &out.o;
    case kTensorLse:
      return &out.lse;
    case kTensorDQ:
      return &out.dq;
    case kTensorDK:
      return &out.dk;
    case kTensorDV:
      return &out.dv;
    default:
      return nullptr;
  }
}

bool IsOutputTensor(uint16_t bit) {
  return bit == kTensorO || bit == kTensorLse || bit == kTensorDQ || bit == kTensorDK ||
         bit == kTensorDV;
}

}  // namespace

size_t CoverageSize(const Workload& w) {
  return static_cast<size_t>(5 * w.batch * w.seq_len * w.q_heads);
}

void WriteOutputEntry(uint16_t tensor, const Entry& entry, const Workload& w,
                      AttentionTensors<float>* out, std::vector<uint8_t>* covered) {
  if ((tensor == kTensorO || tensor == kTensorLse) && !HasForward(w.pass)) return;
  if ((tensor == kTensorDQ || tensor == kTensorDK || tensor == kTensorDV) && !HasBackward(w.pass))
    return;
  TensorF* t = out == nullptr ? nullptr : OutputFor(tensor, *out);
  if (t == nullptr && (out != nullptr || !IsOutputTensor(tensor))) return;
  const size_t base = tensor == kTensorO     ? 0
                      : tensor == kTensorLse ? 1
                      : tensor == kTensorDQ  ? 2
                      : tensor == kTensorDK  ? 3
                                             : 4;
  for (int64_t b = 0; b < entry.batch; ++b) {
    for (int64_t r = 0; r < entry.rows(); ++r) {
      for (int32_t h = entry.head_begin; h < entry.head_begin + entry.heads; ++h) {
        if (t != nullptr)
          std::copy_n(entry.At(b, r, h), static_cast<size_t>(entry.dim),
                      &t->at(b, entry.positions[r], h, 0));
        if (covered != nullptr) {
          const int64_t cell = ((b * w.seq_len + entry.positions[r]) * w.q_heads + h);
          (*covered)[base * static_cast<size_t>(w.batch * w.seq_len * w.q_heads) +
                     static_cast<size_t>(cell)] = 1;
        }
      }
    }
  }
}

AttentionTensors<float> OutputTensors(const Workload& w) {
  AttentionTensors<float> t;
  t.o = TensorF(w.batch, w.seq_len, w.q_heads, w.head_dim);
  t.lse = TensorF(w.batch, w.seq_len, w.q_heads, 1);
  t.dq = TensorF(w.batch, w.seq_len, w.q_heads, w.head_dim);
  t.dk = TensorF(w.batch, w.seq_len, w.kv_heads, w.head_dim);
  t.dv = TensorF(w.batch, w.seq_len, w.kv_heads, w.head_dim);
  return t;
}

}  // namespace meshplan::exec
