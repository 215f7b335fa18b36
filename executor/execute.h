// Runs a schedule for real on P ranks and assembles the global outputs, so they can be compared
// with plain attention (executor/reference.h).
#pragma once

#include <memory>
#include <vector>

#include "core/schedule.h"
#include "core/status.h"
#include "core/workload.h"
#include "executor/rank_runner.h"
#include "executor/tensor.h"
#include "executor/transport.h"

namespace meshplan::exec {

struct ExecutionResult {
  // o, lse (forward) and dq, dk, dv (backward) in the global layout; inputs are not copied.
  AttentionTensors<float> outputs;
  std::vector<std::vector<OpTiming>> timings;  // [rank][op]
  double wall_s = 0;
};

// Executes `schedule` (expanded for `workload`, whose pass must include the forward when it
// includes the backward) with one thread per rank over in-process transports. `inputs` holds q,
// k, v and, for a backward, d_o. Every output element must be produced by some rank; a missing
// one is an error. Failures name the rank and op.
Result<ExecutionResult> ExecuteOnThreads(const Schedule& schedule, const Workload& workload,
                                         const AttentionTensors<float>& inputs, const RunOptions& options = {});

// One rank of an execution over an external transport (MPI: one process per rank). Returns the
// entries this rank ends with, written into `outputs` where this rank produced them
// (`covered` marks those elements), for the caller to gather.
Status ExecuteRank(const Schedule& schedule, const Workload& workload, const AttentionTensors<float>& inputs,
                   Transport& transport, const RunOptions& options, AttentionTensors<float>* outputs,
                   std::vector<uint8_t>* covered, std::vector<OpTiming>* timings);

// Writes a rank's final entry of `tensor` (O, LSE, dQ, dK or dV; others are ignored, as are
// tensors outside w.pass) into the global outputs and marks its elements in `covered`
// (CoverageSize(w) elements, may be null).
void WriteOutputEntry(uint16_t tensor, const Entry& entry, const Workload& w, AttentionTensors<float>* outputs,
                      std::vector<uint8_t>* covered);

// Output tensors sized for the workload (zeros).
AttentionTensors<float> OutputTensors(const Workload& workload);

}  // namespace meshplan::exec
