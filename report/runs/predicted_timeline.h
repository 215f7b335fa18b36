// The simulator's replay of a plan summarised as a measured run's timeline (exec::RunTimeline),
// so that `meshplan execute` compares the two field by field.
#pragma once

#include "executor/timing/timeline.h"
#include "simulator/plan_simulation.h"

namespace meshplan::report {

// Per rank from sim::SimResult::ranks (compute, exposed communication, idle, as the executor
// defines them: executor/timing/timeline.h), the run's time from SimResult::total_s, and per op
// class from SimResult::op_times (schedule ranks, converted to seconds) with the same function as a
// measured run (exec::OpClassTimesOf on the replayed schedule). op_classes is absent when the
// replay did not record op times (SimOptions::record_op_times false).
exec::RunTimeline PredictedTimeline(const sim::PlanSimulation& simulation);

}  // namespace meshplan::report
