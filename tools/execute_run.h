// What `meshplan execute` prepares before a run and what it does after one (check, outputs,
// report); tools/execute_command.cc handles flags, preparation and the transports.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/plan.h"
#include "core/schedule.h"
#include "core/topology.h"
#include "executor/rank_runner.h"
#include "executor/tensor.h"

namespace meshplan::tools {

// --check fails when any output's max relative error exceeds this.
constexpr double kCheckTolerance = 1e-4;

struct ExecuteFlags {
  std::string plan;
  std::string topology;
  std::string backend = "cpu";
  std::string transport = "threads";
  bool check = false;
  uint64_t seed = 1;
  std::string inputs;
  std::string outputs;
  double timeout_s = 30;
  std::string format = "table";
  std::string inject_fail;  // "RANK:OP"
  int inject_silent = -1;
};

// A run ready to go: everything a user can get wrong has been checked before it is built.
struct Prepared {
  Plan plan;  // as run: the pass widened to fwd+bwd when the file says bwd
  Topology topology;
  bool widened = false;
  Schedule schedule;
  exec::AttentionTensors<float> inputs;
  exec::RunOptions options;
};

// After a successful run (on rank 0 for MPI): check against the reference, write the outputs,
// print the report. Returns the exit code.
int FinishExecution(const ExecuteFlags& flags, const Prepared& p, const exec::AttentionTensors<float>& outputs,
                    const std::vector<std::vector<exec::OpTiming>>& timings, double wall_s);

}  // namespace meshplan::tools
