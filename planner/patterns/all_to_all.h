// The head-parallel (Ulysses) all-to-all, a pattern several schemes share: what it moves in each
// phase (docs/schemes.md, ulysses row) and its estimate. The payloads are the one definition of
// the tensors and bytes that both the estimate and every expansion with a head-parallel part
// send (the expansions emit the collective with them), so the two cannot drift apart.
#pragma once

#include <cstdint>

#include "core/plan/schedule.h"
#include "planner/comm_model.h"
#include "planner/context.h"
#include "planner/estimate.h"

namespace meshplan::planner {

struct A2APayload {
  uint16_t tensors = 0;
  double bytes = 0;        // per rank before the all-to-all; (U-1)/U of it is sent
  const char* names = "";  // for time-stage labels
};

// Sequence -> heads before attention. Forward: Q, K, V. Backward with cache: dO (D is computed
// from the kept head-layout O); without: Q, K, V, dO and D (fp32, computed where O lives).
inline A2APayload UlyssesInPayload(const ShardBytes& s, Phase phase, bool cache) {
  if (phase == Phase::kForward)
    return {static_cast<uint16_t>(kTensorQ | kTensorKV), s.q + s.kv, "Q,K,V"};
  if (cache) return {kTensorDO, s.q, "dO"};
  return {static_cast<uint16_t>(kTensorQ | kTensorKV | kTensorDO | kTensorD),
          2 * s.q + s.kv + s.lse, "Q,K,V,dO,D"};
}

// Heads -> sequence after attention. Forward: the final O. Backward: final dQ, dK, dV.
inline A2APayload UlyssesOutPayload(const ShardBytes& s, Phase phase) {
  if (phase == Phase::kForward) return {kTensorO, s.q, "O"};
  return {static_cast<uint16_t>(kTensorDQ | kTensorDKV), s.q + s.kv, "dQ,dK,dV"};
}

// Bytes one rank sends in an all-to-all over `degree` ranks of `bytes` per rank.
inline double AllToAllSent(double bytes, int64_t degree) {
  return degree <= 1 ? 0.0 : bytes * static_cast<double>(degree - 1) / static_cast<double>(degree);
}

// Sequence -> heads all-to-all before attention over `dim` (size U): adds its exposed stage and
// traffic to the estimate and returns the bytes one rank sends. Forward: Q and KV. Backward: dO
// (cache) or Q, KV, dO and D (no cache).
double UlyssesIn(Estimate& e, const PlanContext& ctx, const Placement& placement, int dim,
                 Phase phase, bool cache, Traffic& traffic);
// Heads -> sequence all-to-all after attention. Forward: final O. Backward: final dQ, dK, dV.
double UlyssesOut(Estimate& e, const PlanContext& ctx, const Placement& placement, int dim,
                  Phase phase, Traffic& traffic);

}  // namespace meshplan::planner
