// Structural checks and summaries of expanded schedules (core/plan/schedule.h). docs/schedules.md
// lists the invariants.
//
// Who calls CheckSchedule: the tests, never a run. tests/planner/plan_schedule_agreement_test.cc
// checks every candidate the search enumerates on small clusters, and each scheme's test
// (tests/planner/schemes/) its own expansions. ExpandPlan (planner/plan_schedule.h), and so the
// simulator and the executor, do not: a schedule is a deterministic function of the plan's
// parameters, produced by the strategies those tests cover, and checking is not free (about a
// second for a 1024-rank schedule of 2M ops, timed by the 2-D tile tests in tests/planner/schemes/)
// on every `simulate` and `execute`. Consumers that rely on the invariants say so (e.g.
// executor/device/launch_order.h). Summarize and the imbalance helpers are used by tests only.
#pragma once

#include <cstdint>
#include <vector>

#include "core/base/status.h"
#include "core/plan/schedule.h"
#include "planner/context.h"

namespace meshplan::planner {

struct ScheduleSummary {
  // Per rank. A collective counts its bytes (what this rank sends in it) as both sent and
  // received: the collectives meshplan models are symmetric.
  std::vector<double> bytes_sent, bytes_received;
  std::vector<double> flops;           // all compute ops
  std::vector<double> flops_forward;   // forward compute ops only
  std::vector<double> flops_backward;  // backward compute ops only
  int64_t ops = 0, sends = 0, recvs = 0, computes = 0, merges = 0, collectives = 0;
};
ScheduleSummary Summarize(const Schedule& schedule);

// Max over ranks / mean over ranks of `per_rank` (1 when the mean is 0 or there are no ranks).
double Imbalance(const std::vector<double>& per_rank);
// Imbalance of the total FLOPs per rank.
double FlopsImbalance(const ScheduleSummary& summary);

// Checks, returning the first violation as one line ("rank 5 op 17 (send): ..."):
// - shape: one program per rank, num_ranks == ctx.num_ranks; peers, groups, shards and heads in
//   range; every dep points to an earlier op of the same rank;
// - p2p: for each ordered pair (src, dst), the k-th send src -> dst and the k-th recv on dst
//   from src carry the same tag, tensors and bytes, and their counts agree;
// - collectives: the rank is in the op's group, and every member of a group issues the same
//   sequence of collectives on it (kind, direction, tensors, bytes);
// - progress: an interpreter runs every rank to the end (per rank and stream FIFO in program
//   order; an op starts at the head of its stream once its deps are done; sends are eager; a
//   recv completes once its send is issued; a collective once every member reached it). On a
//   deadlock it names the stuck ops of up to 3 ranks;
// - coverage, per phase of ctx.workload.pass: every block (q shard, kv shard) of s.layout with
//   unmasked pairs is computed exactly once for every query head; empty blocks and phases
//   outside the pass have no computes; each compute's flops equals
//   ctx.ForwardFlops(pairs, head_count) (x kBackwardFlopsFactor backward) within 1e-9 relative.
Status CheckSchedule(const Schedule& schedule, const PlanContext& ctx);

}  // namespace meshplan::planner
