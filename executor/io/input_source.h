// Where an execution's inputs come from, one token row at a time, so a rank materialises only
// the rows of its own shards (per-rank inputs): whole tensors (files, tests) or values generated
// from a seed by a counter-based generator, where every element is a pure function of (seed,
// tensor, index). The generated values are the same whichever rank, order or process asks, so a
// run with per-rank generation is bit-identical to one given the whole tensors of RandomInputs.
#pragma once

#include <cstdint>

#include "core/workload/workload.h"
#include "executor/io/tensor.h"

namespace meshplan::exec {

// Which input tensor (the order is part of the seeded values' definition).
enum class InputTensor : uint8_t { kQ = 0, kK = 1, kV = 2, kDO = 3 };

class InputSource {
 public:
  virtual ~InputSource() = default;
  // Writes the heads * head_dim values of `tensor` at (batch element b, token position) into
  // `out`, heads outer, dim inner. REQUIRES: b < batch, position < seq_len of the workload.
  virtual void Row(InputTensor tensor, int64_t b, int64_t position, float* out) const = 0;
};

// Rows of whole tensors (q, k, v, d_o of `inputs`, which must outlive the source).
class TensorInputSource final : public InputSource {
 public:
  explicit TensorInputSource(const AttentionTensors<float>& inputs) : inputs_(inputs) {}
  void Row(InputTensor tensor, int64_t b, int64_t position, float* out) const override;

 private:
  const AttentionTensors<float>& inputs_;
};

// Element `index` (row-major [B, S, H, d]) of `tensor` generated from `seed`: uniform in [-1, 1)
// with 53 random bits (splitmix64 of a per-tensor key plus the index), exactly a double.
double SeededInputValue(uint64_t seed, InputTensor tensor, uint64_t index);

// The seeded inputs of a workload, generated on demand (as floats: the double values rounded).
class SeededInputSource final : public InputSource {
 public:
  SeededInputSource(const Workload& workload, uint64_t seed) : workload_(workload), seed_(seed) {}
  void Row(InputTensor tensor, int64_t b, int64_t position, float* out) const override;

 private:
  Workload workload_;
  uint64_t seed_;
};

// Every row of a source as whole float tensors (q, k, v, and d_o when `w` has a backward).
AttentionTensors<float> MaterializeInputs(const Workload& w, const InputSource& source);

}  // namespace meshplan::exec
