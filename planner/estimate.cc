#include "planner/estimate.h"

namespace meshplan::planner {

void FinishTime(Estimate& e) {
  e.time_s = 0;
  e.compute_s = 0;
  for (const TimeStage& s : e.stages) {
    e.time_s += s.Seconds();
    e.compute_s += static_cast<double>(s.count) * s.compute_s;
  }
  e.exposed_comm_s = e.time_s - e.compute_s;
  e.time_s += e.framework_overhead_s + e.shared_device_lag_s;
}

void AddExposed(Estimate& e, const std::string& label, double comm_s) {
  if (comm_s > 0) e.stages.push_back({label, 0.0, comm_s, false, 1});
}

void AddCompute(Estimate& e, const std::string& label, double compute_s) {
  e.stages.push_back({label, compute_s, 0.0, false, 1});
}

}  // namespace meshplan::planner
