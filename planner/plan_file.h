// Plan files (TOML): the small recipe that the simulator and the executor read back. The reader
// lives in the planner because a plan's [scheme] values are read and checked by the scheme's own
// unit (planner/schemes/registry.h); only tools/ (and tests) include it.
#pragma once

#include <string>
#include <string_view>

#include "core/base/status.h"
#include "core/plan/plan.h"

namespace meshplan::planner {

// Serialises a plan. Format (docs/plan-format.md):
//   schema_version = 1
//   [workload] batch, seq, heads, kv_heads, head_dim, dtype, partial_dtype, mask, pass
//              (documents masks store their lengths inline as document_lengths = [...])
//   [topology] name, source, gpus
//   [scheme]   name, layout, ulysses, ring, window, tile_a, tile_b, cache_forward,
//              reduce_chain, placement = [...]
// Optional [estimate] values are informational and ignored when read.
std::string PlanToToml(const Plan& plan, const std::string& estimate_toml = "");
// Parses and validates a plan file's text (unknown keys, wrong types, bad values: errors that
// name the source and key). Does not check the plan against a topology.
Result<Plan> ParsePlanToml(std::string_view text, const std::string& source);
Result<Plan> LoadPlanFile(const std::string& path);

}  // namespace meshplan::planner
