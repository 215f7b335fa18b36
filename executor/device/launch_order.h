// The order in which the GPU executor issues a schedule's ops onto device streams.
//
// Device work is enqueued ahead of execution, so the host must issue every op after the ops it
// waits for (deps, earlier ops of its stream) and must issue both ends of a transfer together:
// NCCL matches a send with its receive only when both are posted, and ranks driven from one
// thread (or one process per rank) must post them in one consistent order or deadlock. The launch
// order is a sequence of steps that every process computes identically from the schedule:
//  - a local step issues one compute or merge op of one rank;
//  - an exchange step issues, as one NCCL group, every send/receive pair and every collective
//    whose ops are all at the head of their streams with their deps issued in earlier steps.
// Issuing steps in order can never deadlock on the device: everything a step's ops wait for was
// issued in an earlier step (induction over steps). Sends are rendezvous here (a send is issued
// with its receive), which is stricter than the eager sends of the CPU executor and the
// simulator; a schedule that needs buffered sends fails to order, naming the stuck ops.
#pragma once

#include <cstdint>
#include <vector>

#include "core/base/status.h"
#include "core/plan/schedule.h"

namespace meshplan::exec {

struct PairLaunch {
  int32_t src = 0, dst = 0;  // ranks
  uint32_t send_op = 0, recv_op = 0;
};

struct CollectiveLaunch {
  int32_t group = 0;
  std::vector<uint32_t> ops;  // op index of each member, in Schedule::groups[group] order
};

struct LaunchStep {
  // Local step: rank >= 0 and op; exchange step: rank == -1 and pairs/collectives.
  int32_t rank = -1;
  uint32_t op = 0;
  std::vector<PairLaunch> pairs;
  std::vector<CollectiveLaunch> collectives;
  bool local() const { return rank >= 0; }
};

struct LaunchOrder {
  std::vector<LaunchStep> steps;
};

// REQUIRES: the schedule passes CheckSchedule (matched sends/receives, consistent collectives).
// Fails (kInternal) when the ops cannot all be ordered, naming up to three ranks' stuck ops.
Result<LaunchOrder> BuildLaunchOrder(const Schedule& schedule);

}  // namespace meshplan::exec
