#include "tools/cli_common.h"

#include <cstdio>
#include <filesystem>
#include <sstream>

#include "core/topology_toml.h"
#include "core/units.h"

namespace meshplan::tools {

int ReportError(const Status& status) {
  std::fprintf(stderr, "meshplan: error: %s\n", status.message().c_str());
  switch (status.code()) {
    case ErrorCode::kOk:
      return kExitOk;
    case ErrorCode::kInvalidInput:
    case ErrorCode::kNotFound:
      return kExitInvalidInput;
    default:
      return kExitFailure;
  }
}

void WorkloadFlags::Register(CLI::App& app) {
  app.add_option("--batch", batch, "Sequences per step")->capture_default_str();
  app.add_option("--seq", seq, "Sequence length in tokens (4096, 512K, 1M, 2^20)")->capture_default_str();
  app.add_option("--heads", heads, "Query heads")->capture_default_str();
  app.add_option("--kv-heads", kv_heads, "KV heads (GQA; divides --heads)")->capture_default_str();
  app.add_option("--head-dim", head_dim, "Head dimension")->capture_default_str();
  app.add_option("--dtype", dtype, "Element type: bf16, fp16, fp32, fp8")->capture_default_str();
  app.add_option("--partial-dtype", partial_dtype,
                 "Type of partial O/dQ/dK/dV in transit: fp32 or bf16")
      ->capture_default_str();
  app.add_option("--mask", mask, "full, causal, window:W or docs:FILE (document lengths)")
      ->capture_default_str();
  app.add_option("--pass", pass, "fwd, bwd or fwd+bwd")->capture_default_str();
}

Result<Workload> WorkloadFlags::Build() const {
  Workload w;
  auto count = [](const std::string& flag, const std::string& text, int64_t* out) -> Status {
    auto value = ParseCount(text);
    if (!value.ok()) return value.status().WithContext(flag);
    *out = *value;
    return Status::Ok();
  };
  MESHPLAN_RETURN_IF_ERROR(count("--batch", batch, &w.batch));
  MESHPLAN_RETURN_IF_ERROR(count("--seq", seq, &w.seq_len));
  MESHPLAN_RETURN_IF_ERROR(count("--heads", heads, &w.q_heads));
  MESHPLAN_RETURN_IF_ERROR(count("--kv-heads", kv_heads, &w.kv_heads));
  MESHPLAN_RETURN_IF_ERROR(count("--head-dim", head_dim, &w.head_dim));
  auto d = ParseDType(dtype);
  if (!d.ok()) return d.status().WithContext("--dtype");
  w.dtype = *d;
  auto pd = ParseDType(partial_dtype);
  if (!pd.ok()) return pd.status().WithContext("--partial-dtype");
  w.partial_dtype = *pd;
  auto m = ParseMask(mask);
  if (!m.ok()) return m.status().WithContext("--mask");
  w.mask = std::move(m).value();
  auto p = ParsePass(pass);
  if (!p.ok()) return p.status().WithContext("--pass");
  w.pass = *p;
  if (Status st = w.Validate(); !st.ok()) return st.WithContext("workload");
  return w;
}

void TopologyFlag::Register(CLI::App& app) {
  app.add_option("--topology,-t", path, "Cluster TOML file (default: built-in 32 x 8 H100, topologies/dgx-h100-32node.toml)");
}

Result<Topology> TopologyFlag::Load() const {
  if (path.empty()) return DefaultTopology();
  return LoadTopologyFile(path);
}

Result<Topology> PlanTopology(const std::string& plan_file, const std::string& topology_flag, const Plan& plan) {
  if (!topology_flag.empty()) return LoadTopologyFile(topology_flag);
  if (plan.topology_source == "built-in") return DefaultTopology();
  std::error_code error;
  if (!plan.topology_source.empty() && std::filesystem::is_regular_file(plan.topology_source, error)) {
    return LoadTopologyFile(plan.topology_source);
  }
  return Status::Invalid(plan_file + ": made for topology '" + plan.topology_name + "' from '" +
                         plan.topology_source + "', which is not a file here; pass --topology FILE");
}

Status CheckFormat(const std::string& format, const std::vector<std::string>& allowed) {
  std::string list;
  for (const auto& a : allowed) {
    if (a == format) return Status::Ok();
    list += (list.empty() ? "" : ", ") + a;
  }
  return Status::Invalid("--format: unknown format '" + format + "' (expected " + list + ")");
}

std::vector<std::string> SplitList(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

}  // namespace meshplan::tools
