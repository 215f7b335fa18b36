#include "capacity/draw_range.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "core/workload/workload.h"
#include "executor/calibration/calibration.h"
#include "planner/context.h"
#include "planner/evaluate_plan.h"
#include "planner/schemes/registry.h"
#include "planner/search.h"

namespace meshplan::capacity {
Result<DrawRange> MeasureDrawRange(const std::vector<Topology>& draws, const Topology& combined,
                                   const DrawProbe& probe) {
  if (draws.empty()) return Status::Invalid("draw range: no draws");
  const int64_t ranks = combined.num_gpus();
  std::vector<double> lows, highs;
  for (const Mask& mask : {Mask::Full(), Mask::Causal()}) {
    for (Pass pass : {Pass::kForward, Pass::kForwardBackward}) {
      Workload w;
      w.batch = 1;
      w.seq_len = probe.tokens_per_rank * ranks;
      w.q_heads = 2 * ranks;
      w.kv_heads = ranks;
      w.head_dim = probe.head_dim;
      w.dtype = probe.dtype;
      w.mask = mask;
      w.pass = pass;
      MESHPLAN_RETURN_IF_ERROR(w.Validate().WithContext("draw range: the probe workload"));
      const planner::PlanContext ctx(w, combined);
      const planner::SearchResult result = planner::Search(ctx, {});
      std::vector<std::unique_ptr<planner::PlanContext>> draw_contexts;
      for (const Topology& t : draws)
        draw_contexts.push_back(std::make_unique<planner::PlanContext>(w, t));
      for (const planner::Estimate& e : result.ranked) {
        if (!e.valid || !(e.time_s > 0)) continue;
        const planner::Strategy* strategy = planner::FindStrategy(e.params.scheme);
        if (strategy == nullptr) continue;
        double low = std::numeric_limits<double>::infinity(), high = 0;
        bool timed = true;
        for (const auto& draw_ctx : draw_contexts) {
          const planner::Estimate d = planner::EvaluatePlan(*draw_ctx, *strategy, e.params);
          if (!d.valid || !(d.time_s > 0)) {
            timed = false;
            break;
          }
          low = std::min(low, d.time_s / e.time_s);
          high = std::max(high, d.time_s / e.time_s);
        }
        if (!timed) continue;
        lows.push_back(low);
        highs.push_back(high);
      }
    }
  }
  if (lows.empty())
    return Status::Invalid("draw range: no probe plan could be timed on every draw");
  DrawRange range;
  range.plans = static_cast<int64_t>(lows.size());
  range.low = std::min(1.0, std::floor(exec::Median(lows) * 1000) / 1000);
  range.high = std::max(1.0, std::ceil(exec::Median(highs) * 1000) / 1000);
  return range;
}

}  // namespace meshplan::capacity
