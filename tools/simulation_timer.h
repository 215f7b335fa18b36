// The simulator behind the planner's PlanTimer interface, for `meshplan plan --simulate K`.
#pragma once

#include <string>

#include "planner/plan_timer.h"

namespace meshplan::tools {

// Times a plan by expanding its schedule and replaying it with sim::Simulate (no op times kept).
// When `progress` is true each call prints "meshplan: simulating plan i/K..." on stderr, i
// counting calls from 1 and K = `total`.
class SimulationTimer : public planner::PlanTimer {
 public:
  SimulationTimer(int total, bool progress) : total_(total), progress_(progress) {}
  Result<double> Seconds(const planner::PlanContext& ctx, const SchemeParams& params) override;

 private:
  int total_;
  bool progress_;
  int calls_ = 0;
};

}  // namespace meshplan::tools
