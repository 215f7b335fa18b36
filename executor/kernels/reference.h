// Plain attention in double precision: the reference every distributed run is checked against.
// Scores are scale * q.k with scale = 1/sqrt(d); masked pairs are excluded (a row with no
// visible key gets O = 0 and LSE = -inf). GQA: query head h reads KV head h / (Hq / Hkv).
#pragma once

#include <cstdint>
#include <vector>

#include "core/sequence/mask_rule.h"
#include "core/workload/workload.h"
#include "executor/io/tensor.h"

namespace meshplan::exec {

// "May query position q see key position k?", in O(1): core/sequence/mask_rule.h's rule with a
// table of each token's document (tests/core/sequence/mask_rule_test.cc checks the rule against
// hand-written grids, and the reference against them too).
class ReferenceVisibility {
 public:
  // REQUIRES: ValidateMask(mask, seq_len).ok().
  ReferenceVisibility(const Mask& mask, int64_t seq_len);
  bool operator()(int64_t q, int64_t k) const;

 private:
  MaskParams params_;
  std::vector<int64_t> doc_of_;  // document kinds: doc_of_[t] = index of the document holding t
};

// Fills t.o and t.lse from t.q, t.k, t.v (shapes per executor/io/tensor.h, from the workload).
// REQUIRES: w.Validate().ok(); tensors sized for w.
void ReferenceForward(const Workload& w, AttentionTensors<double>& t);
// Fills t.dq, t.dk, t.dv from t.q, t.k, t.v, t.o, t.lse and t.d_o (D = rowsum(dO * O)).
void ReferenceBackward(const Workload& w, AttentionTensors<double>& t);

// Random inputs (uniform in [-1, 1), never all zero) for the workload, reproducible by seed:
// element i of each input is SeededInputValue(seed, tensor, i) (executor/io/input_source.h).
AttentionTensors<double> RandomInputs(const Workload& w, uint64_t seed);

}  // namespace meshplan::exec
