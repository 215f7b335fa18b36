// When one op of a run ran: what the engine's backends report per op and what every timing
// summary (executor/timing/) reads.
#pragma once

namespace meshplan::exec {

struct OpTiming {
  double start_s = 0;  // since the run's start (per rank on a device), when the op's deps were met
  double end_s = 0;    // when all of the op's work on its stream had finished
};

}  // namespace meshplan::exec
