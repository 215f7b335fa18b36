// The workload in every command's JSON: its sizes as fields a script reads without parsing text,
// and the text the tables print beside them (docs/plan-output.md, "The workload object").
#pragma once

#include <string>

#include "core/base/json_writer.h"
#include "core/workload/workload.h"

namespace meshplan::report {

// Which of a workload's fields a report fixes: a bench or a longest-fit search varies the
// sequence length (and a bench the mask), and leaves them out.
struct WorkloadJsonFields {
  bool seq = true;
  bool mask = true;
};

// Writes {"batch", "seq", "heads", "kv_heads", "head_dim", "dtype", "partial_dtype", "mask",
// "pass", "text"} as the value of the key just written; "text" is `text`, or Describe() when "".
void WriteWorkloadJson(JsonWriter& j, const Workload& w, const std::string& text = "",
                       WorkloadJsonFields fields = {});

}  // namespace meshplan::report
