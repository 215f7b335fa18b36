#include "report/runs/calibration_report.h"

#include "core/base/json_writer.h"
#include "report/topology/topology_list.h"

namespace meshplan::report {
namespace {

// TopologyJson without its closing newline, to embed.
std::string EmbeddedTopology(const Topology& t) {
  std::string json = TopologyJson(t);
  if (!json.empty() && json.back() == '\n') json.pop_back();
  return json;
}

}  // namespace

std::string CalibrationJson(const exec::CalibrationResult& result, const std::string& toml) {
  JsonWriter j;
  j.BeginObject();
  j.Key("topology");
  j.Raw(EmbeddedTopology(result.topology));
  j.Key("fit");
  j.BeginObject();
  j.Key("kernel_median_error");
  j.Number(result.kernel_median_residual);
  j.Key("kernel_max_error");
  j.Number(result.kernel_max_residual);
  j.Key("message_median_error");
  j.Number(result.message_median_residual);
  j.Key("message_max_error");
  j.Number(result.message_max_residual);
  j.EndObject();
  j.Key("kernels");
  j.BeginArray();
  for (const exec::KernelSample& k : result.kernels) {
    j.BeginObject();
    j.Key("piece");
    j.String(exec::BlockPieceName(k.piece));
    j.Key("n");
    j.Int(k.n);
    j.Key("pass");
    j.String(k.backward ? "bwd" : "fwd");
    j.Key("flops");
    j.Number(k.flops);
    j.Key("measured_s");
    j.Number(k.measured_s);
    j.Key("model_s");
    j.Number(k.model_s);
    j.EndObject();
  }
  j.EndArray();
  j.Key("messages");
  j.BeginArray();
  for (const exec::MessageSample& m : result.messages) {
    j.BeginObject();
    j.Key("bytes");
    j.Int(m.bytes);
    j.Key("measured_s");
    j.Number(m.measured_s);
    j.Key("model_s");
    j.Number(m.model_s);
    j.EndObject();
  }
  j.EndArray();
  j.Key("reference_block_s");
  j.BeginArray();
  for (double t : result.reference_block_s) j.Number(t);
  j.EndArray();
  j.Key("round_time_factors");
  j.BeginArray();
  for (double f : result.round_time_factors) j.Number(f);
  j.EndArray();
  j.Key("sharing");
  j.BeginObject();
  j.Key("ranks");
  j.Int(result.sharing.ranks);
  j.Key("alone_s");
  j.Number(result.sharing.alone_s);
  j.Key("ends_s");
  j.BeginArray();
  for (double end : result.sharing.ends_s) j.Number(end);
  j.EndArray();
  j.Key("spread");
  j.Number(result.sharing.spread);
  j.Key("end_lag_s");
  j.Number(result.sharing.end_lag_s);
  j.Key("fair_end_s");
  j.Number(result.sharing.fair_end_s);
  j.Key("long_end_lag_s");
  j.Number(result.sharing.long_end_lag_s);
  j.Key("long_fair_end_s");
  j.Number(result.sharing.long_fair_end_s);
  j.EndObject();
  j.Key("toml");
  j.String(toml);
  j.EndObject();
  return j.Take() + "\n";
}

std::string CalibrationDrawsJson(const Topology& combined, const capacity::DrawRange& range,
                                 const std::vector<Topology>& draws, const std::string& toml) {
  JsonWriter j;
  j.BeginObject();
  j.Key("topology");
  j.Raw(EmbeddedTopology(combined));
  j.Key("draw_range");
  j.BeginObject();
  j.Key("low");
  j.Number(range.low);
  j.Key("high");
  j.Number(range.high);
  j.Key("plans");
  j.Int(range.plans);
  j.EndObject();
  j.Key("draws");
  j.BeginArray();
  for (const Topology& t : draws) j.Raw(EmbeddedTopology(t));
  j.EndArray();
  j.Key("toml");
  j.String(toml);
  j.EndObject();
  return j.Take() + "\n";
}

}  // namespace meshplan::report
