// Communication/computation patterns shared by several schemes (the head-parallel all-to-all,
// the KV ring pass, the Mesh-Attention tile pass). Each adds its time stages to the estimate,
// its bytes to the traffic, and returns the bytes per rank it sends (docs/schemes.md).
#pragma once

#include "core/schedule.h"
#include "planner/comm_model.h"
#include "planner/context.h"
#include "planner/estimate.h"

namespace meshplan::planner::schemes {

// Sequence -> heads all-to-all before attention over `dim` (size U). Forward: Q and KV.
// Backward: dO (cache) or Q, KV, dO and D (no cache).
double UlyssesIn(Estimate& e, const PlanContext& ctx, const Placement& placement, int dim,
                 Phase phase, bool cache, Traffic& traffic);
// Heads -> sequence all-to-all after attention. Forward: final O. Backward: final dQ, dK, dV.
double UlyssesOut(Estimate& e, const PlanContext& ctx, const Placement& placement, int dim,
                  Phase phase, Traffic& traffic);

// One ring pass over `dim` (size R): R steps of `step_compute_s`, KV shifts overlapped; the
// backward adds the dK+dV owner-last chain (and no KV shifts with cache). With cache and
// own_shard_last the backward runs the own shard last (sched::RingPass::own_shard_last), so the
// chain's last hop overlaps it instead of following the last block.
double RingPass(Estimate& e, const PlanContext& ctx, const Placement& placement, int dim, Phase phase,
                bool cache, bool own_shard_last, double step_compute_s, Traffic& traffic);

// LoongTrain double ring over dims inner (size w) and outer (size cp/w).
double DoubleRingPass(Estimate& e, const PlanContext& ctx, const Placement& placement, int inner_dim,
                      int outer_dim, Phase phase, bool cache, double step_compute_s, Traffic& traffic);

// One Mesh-Attention tile pass (mesh or mesh-ulysses plan) following the greedy step schedule
// with this plan's step costs (planner/mesh/step_costs.h).
double MeshPass(Estimate& e, const PlanContext& ctx, const SchemeParams& params,
                const Placement& placement, Phase phase, Traffic& traffic);

// ATTENTION2D pass: collectives over dims q and kv, not overlapped with the compute.
double Attention2DPass(Estimate& e, const PlanContext& ctx, const Placement& placement, int q_dim,
                       int kv_dim, Phase phase, bool cache, double compute_s, Traffic& traffic);

// ATTENTION2D-O pass (docs/schedules.md, "ATTENTION2D-O"): the a x b tile row by row, `block_s`
// per forward block (the backward scales it). Row 0 gathers K,V as a ring (one shift per block);
// one Q-group shift per row brings the next row's Q slot; the partial of row k (O+LSE forward,
// dQ backward) follows one row behind (owner-last chain, a-1 hops, the last exposed); the
// backward's last row carries the owner-last dK+dV chain (b-1 hops, the last exposed).
double Attention2DOverlapPass(Estimate& e, const PlanContext& ctx, const Placement& placement, int q_dim,
                              int kv_dim, Phase phase, bool cache, double block_s, Traffic& traffic);

}  // namespace meshplan::planner::schemes
