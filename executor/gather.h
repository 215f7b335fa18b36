// Collecting one execution's results at rank 0 over a Transport, for runs with one process per
// rank (`meshplan execute --transport mpi`): every rank runs ExecuteRank, then GatherOutputs
// brings the outputs each rank produced (and its op timings) to rank 0, which checks that every
// output element was produced by some rank. ExchangeCodes is the start barrier before the run.
//
// Messages use tags from kGatherTagBase up, above every transfer tag of the host backend
// (host_device_ops.cc: below 2^50), so they never mix with a schedule's messages.
#pragma once

#include <cstdint>
#include <vector>

#include "core/base/status.h"
#include "core/workload/workload.h"
#include "executor/device/engine_outputs.h"
#include "executor/device/run_options.h"
#include "executor/io/tensor.h"
#include "executor/timing/op_timing.h"
#include "executor/transport/transport.h"

namespace meshplan::exec {

inline constexpr int64_t kGatherTagBase = int64_t{1} << 50;

// Fails (kInternal, naming the tensor, token and head) when an output of w.pass has an element no
// rank produced.
Status CheckCoverage(const Workload& w, const std::vector<uint8_t>& covered);

// A barrier that also agrees on whether every rank is ready: every rank contributes `code` (0:
// ready, else its exit code) and gets back every rank's code (index = rank). Rank 0 collects and
// then answers, so no rank returns before all have called. Fails (kIo) when a message does not
// arrive by `deadline`.
Result<std::vector<int>> ExchangeCodes(Transport& transport, int code, Clock::time_point deadline);

struct GatheredRun {
  AttentionTensors<float> outputs;             // o, lse, dq, dk, dv of the pass (global layout)
  std::vector<std::vector<OpTiming>> timings;  // [rank][op], each rank's times since its start
};

// Every rank calls this after ExecuteRank with what it produced. Ranks other than 0 send their
// covered elements and timings to rank 0 and return an empty GatheredRun; rank 0 returns every
// rank's outputs assembled and checked for coverage (CheckCoverage), and every rank's timings.
// `outputs` and `covered` are ExecuteRank's (sized by OutputTensors and CoverageSize).
Result<GatheredRun> GatherOutputs(Transport& transport, const Workload& w,
                                  const AttentionTensors<float>& outputs,
                                  const std::vector<uint8_t>& covered,
                                  const std::vector<OpTiming>& timings, Clock::time_point deadline);

}  // namespace meshplan::exec
