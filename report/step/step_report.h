// The whole training step's answer as a text report and as JSON (meshplan step): the step's
// figures as frameworks report them, its time by part, its memory by part, and the
// context-parallel plan of its attention layers.
#pragma once

#include <string>

#include "step/config_search.h"
#include "step/whole_step.h"

namespace meshplan::report {

// The text report: the configuration, step time, tokens/s and model TFLOP/s per GPU, the time
// and memory breakdowns, whether it fits (and by how much it does not), the plan and the notes.
std::string StepText(const step::StepRequest& request, const step::StepAnswer& answer);

// JSON: step_s, tokens_per_s_per_gpu, model_tflops_per_gpu, fits, the configuration, "time"
// and "memory" objects by part (seconds, bytes) and the attention plan.
std::string StepJson(const step::StepRequest& request, const step::StepAnswer& answer);

// A search's ranking (the first `top` configurations, 0: all): degrees, recompute, step time,
// model TFLOP/s per GPU, memory, fit and the attention plan; then how many were planned.
std::string StepSearchText(const step::StepSearch& search, int top);
// JSON: "configurations" (each: tp, cp, dp, pp, recompute, step_s, model_tflops_per_gpu,
// memory_bytes, fits, attention_plan), "candidates", "evaluated".
std::string StepSearchJson(const step::StepSearch& search);
// Each framework's best beside the best over every plan, and why it cannot run the latter.
std::string FrameworkComparisonText(const step::FrameworkComparison& comparison);

}  // namespace meshplan::report
