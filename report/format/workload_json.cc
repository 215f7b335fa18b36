#include "report/format/workload_json.h"

namespace meshplan::report {

void WriteWorkloadJson(JsonWriter& j, const Workload& w, const std::string& text,
                       WorkloadJsonFields fields) {
  j.BeginObject();
  j.Key("batch");
  j.Int(w.batch);
  if (fields.seq) {
    j.Key("seq");
    j.Int(w.seq_len);
  }
  j.Key("heads");
  j.Int(w.q_heads);
  j.Key("kv_heads");
  j.Int(w.kv_heads);
  j.Key("head_dim");
  j.Int(w.head_dim);
  j.Key("dtype");
  j.String(DTypeName(w.dtype));
  j.Key("partial_dtype");
  j.String(DTypeName(w.partial_dtype));
  if (fields.mask) {
    j.Key("mask");
    j.String(w.mask.ToString());
  }
  j.Key("pass");
  j.String(PassName(w.pass));
  j.Key("text");
  j.String(text.empty() ? w.Describe() : text);
  j.EndObject();
}

}  // namespace meshplan::report
