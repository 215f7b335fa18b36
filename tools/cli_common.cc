#include "tools/cli_common.h"

#include <cstdio>
#include <filesystem>
#include <sstream>
#include <utility>

#include "capacity/scale_topology.h"
#include "core/base/atomic_file.h"
#include "core/base/csv_append.h"
#include "core/base/escape.h"
#include "core/base/toml_util.h"
#include "core/base/units.h"
#include "core/cluster/topology_catalog.h"
#include "core/cluster/topology_toml.h"
#include "executor/host_memory.h"

namespace meshplan::tools {

int ReportError(const Status& status) {
  // Escaped, so that bytes a message quotes from a file or flag never break it into lines.
  std::fprintf(stderr, "meshplan: error: %s\n", EscapeControlBytes(status.message()).c_str());
  switch (status.code()) {
    case ErrorCode::kOk:
      return kExitOk;
    case ErrorCode::kInvalidInput:
    case ErrorCode::kNotFound:
    case ErrorCode::kOutOfMemory:
      return kExitInvalidInput;
    default:
      return kExitFailure;
  }
}

void WorkloadFlags::Register(CLI::App& app) {
  app_ = &app;
  app.add_option("--model", model,
                 "Model whose attention to plan: a Hugging Face config.json, or a shipped name "
                 "(llama-3.1-70b, ...: models/README.md); --heads, --kv-heads, --head-dim and "
                 "--dtype given beside it override its values");
  app.add_option("--batch", batch, "Sequences per step")->capture_default_str();
  app.add_option("--seq", seq, "Sequence length in tokens (4096, 512K, 1M, 2^20)")
      ->capture_default_str();
  app.add_option("--heads", heads, "Query heads")->capture_default_str();
  app.add_option("--kv-heads", kv_heads, "KV heads (GQA; divides --heads)")->capture_default_str();
  app.add_option("--head-dim", head_dim, "Head dimension")->capture_default_str();
  app.add_option("--dtype", dtype, "Element type: bf16, fp16, fp32, fp8")->capture_default_str();
  app.add_option("--partial-dtype", partial_dtype,
                 "Type of partial O/dQ/dK/dV in transit: fp32 or bf16")
      ->capture_default_str();
  app.add_option(
         "--mask", mask,
         "full, causal, window:W, prefix:N, docs:FILE, docs-full:FILE, docs-sampled:SPEC or "
         "docs-full-sampled:SPEC (docs/usage.md, masks)")
      ->capture_default_str();
  app.add_option("--pass", pass, "fwd, bwd or fwd+bwd")->capture_default_str();
}

Result<WorkloadFields> WorkloadFlags::Fields(
    const std::function<bool(const std::string& flag)>& given) const {
  WorkloadFields fields;
  auto parse = [&](const char* flag, const std::string& text, auto parser, auto* out) -> Status {
    if (!given(flag)) return Status::Ok();
    auto value = parser(text);
    if (!value.ok()) return value.status().WithContext(flag);
    *out = std::move(value).value();
    return Status::Ok();
  };
  MESHPLAN_RETURN_IF_ERROR(parse("--batch", batch, ParseCount, &fields.batch));
  MESHPLAN_RETURN_IF_ERROR(parse("--seq", seq, ParseCount, &fields.seq_len));
  MESHPLAN_RETURN_IF_ERROR(parse("--heads", heads, ParseCount, &fields.q_heads));
  MESHPLAN_RETURN_IF_ERROR(parse("--kv-heads", kv_heads, ParseCount, &fields.kv_heads));
  MESHPLAN_RETURN_IF_ERROR(parse("--head-dim", head_dim, ParseCount, &fields.head_dim));
  MESHPLAN_RETURN_IF_ERROR(parse("--dtype", dtype, ParseDType, &fields.dtype));
  MESHPLAN_RETURN_IF_ERROR(
      parse("--partial-dtype", partial_dtype, ParseDType, &fields.partial_dtype));
  MESHPLAN_RETURN_IF_ERROR(parse("--mask", mask, ParseMask, &fields.mask));
  MESHPLAN_RETURN_IF_ERROR(parse("--pass", pass, ParsePass, &fields.pass));
  return fields;
}

bool WorkloadFlags::Given(const std::string& flag) const {
  return app_ != nullptr && app_->count(flag) > 0;
}

Result<std::optional<ModelConfig>> WorkloadFlags::Model() const {
  if (model.empty()) return std::optional<ModelConfig>();
  auto config = LoadModelConfig(model);
  if (!config.ok()) return config.status().WithContext("--model");
  return std::optional<ModelConfig>(std::move(config).value());
}

Result<WorkloadFields> WorkloadFlags::FieldsWithModel(
    const std::function<bool(const std::string& flag)>& include) const {
  MESHPLAN_ASSIGN_OR_RETURN(auto config, Model());
  if (!config) return Fields(include);
  const WorkloadFields from_model = config->Fields();
  auto model_sets = [&](const std::string& flag) {
    return flag == "--heads" || flag == "--kv-heads" || flag == "--head-dim" ||
           (flag == "--dtype" && from_model.dtype.has_value());
  };
  auto counted = [&](const std::string& flag) {
    return include(flag) && (!model_sets(flag) || Given(flag));
  };
  MESHPLAN_ASSIGN_OR_RETURN(auto flags, Fields(counted));
  WorkloadFields out = from_model;
  out.Overlay(flags);
  return out;
}

Result<Workload> WorkloadFlags::Build() const {
  MESHPLAN_ASSIGN_OR_RETURN(auto fields, FieldsWithModel([](const std::string&) { return true; }));
  Workload w = fields.ApplyTo(Workload::Default());
  if (Status st = SetSequenceLength(w, w.seq_len); !st.ok()) return st.WithContext("workload");
  if (Status st = w.Validate(); !st.ok()) return st.WithContext("workload");
  return w;
}

void ParallelFlags::Register(CLI::App& app) {
  app.add_option("--tp", degrees.tp,
                 "Tensor-parallel degree beside context parallelism: the innermost N GPUs of a "
                 "node, dividing the heads; the context-parallel group takes the rest "
                 "(docs/usage.md, tensor parallelism)")
      ->capture_default_str();
  app.add_option("--dp", degrees.dp,
                 "Data-parallel replicas: the cluster's outermost groups, each running its own "
                 "context-parallel groups")
      ->capture_default_str();
}

void TopologyFlag::Register(CLI::App& app) {
  app.add_option("--topology,-t", path,
                 "Cluster: a TOML file, or the name of a shipped one (meshplan topo list) "
                 "(default: built-in 32 x 8 H100, dgx-h100-32node)");
  model.Register(app);
}

Result<Topology> TopologyFlag::Load() const {
  Result<Topology> topology = path.empty() ? Result<Topology>(DefaultTopology())
                                           : LoadTopologyFlag(path, quiet != nullptr && *quiet);
  if (!topology.ok()) return topology;
  MESHPLAN_RETURN_IF_ERROR(model.Apply(*topology));
  return topology;
}

void ModelFlags::Register(CLI::App& app) {
  app.add_option("--attention-kernel", attention_kernel,
                 "Attention library whose kernel curve the model uses: fa2, fa3, cudnn or own "
                 "(default: the cluster file's gpu.attention_kernel; topologies/README.md)");
  app.add_option_function<double>(
      "--step-overhead-ms",
      [this](double ms) {
        step_overhead_ms = ms;
        step_overhead_given = true;
      },
      "The framework's fixed time per attention call (forward and backward are a call "
      "each), added to every plan's time (default: the cluster file's "
      "framework.step_overhead_us, else 0)");
}

Status ModelFlags::Apply(Topology& topology) const {
  if (!attention_kernel.empty())
    MESHPLAN_RETURN_IF_ERROR(topology.UseAttentionKernel(attention_kernel));
  if (step_overhead_given) {
    MESHPLAN_RETURN_IF_ERROR(
        topology.SetStepOverheadMs(step_overhead_ms).WithContext("--step-overhead-ms"));
  }
  return Status::Ok();
}

Result<Topology> LoadTopologyFlag(const std::string& name_or_path, bool quiet) {
  auto topology = LoadTopology(name_or_path);
  if (!topology.ok() && IsTopologyName(name_or_path)) {
    return topology.status().WithContext("--topology");
  }
  // Values no hardware reaches (Gb/s written as GB/s, mostly) are said, not refused: a study may
  // mean them.
  if (topology.ok() && !quiet) PrintPlausibilityNotes(*topology);
  return topology;
}

void PrintPlausibilityNotes(const Topology& topology) {
  for (const std::string& note : topology.PlausibilityNotes()) {
    std::fprintf(stderr, "meshplan: note: %s: %s\n", EscapeControlBytes(topology.source).c_str(),
                 EscapeControlBytes(note).c_str());
  }
}

namespace {

// The plan's own topology must still be the one it was made for: a file edited or replaced since
// would silently give other numbers.
Result<Topology> SameNameAsPlan(const std::string& plan_file, const Plan& plan,
                                Result<Topology> topology) {
  if (!topology.ok() || topology->name == plan.topology_name) return topology;
  // A plan made on the cluster's first N GPUs (`plan --gpus N`) names it NAME@N
  // (capacity::ScaleTopology): the same file, scaled again.
  const std::string prefix = topology->name + "@";
  if (plan.topology_name.rfind(prefix, 0) == 0) {
    auto gpus = ParseCount(plan.topology_name.substr(prefix.size()));
    if (gpus.ok()) {
      auto scaled = capacity::ScaleTopology(*topology, *gpus);
      if (scaled.ok() && scaled->name == plan.topology_name) return scaled;
    }
  }
  return Status::Invalid(plan_file + ": topology.name: the plan was made for topology " +
                         QuoteInput(plan.topology_name) + ", but its source " +
                         QuoteInput(plan.topology_source) + " describes " +
                         QuoteInput(topology->name) +
                         "; pass --topology FILE to run it on that cluster anyway");
}

// The topology file a plan runs on (PlanTopology, before its attention kernel is chosen).
Result<Topology> PlanTopologyFile(const std::string& plan_file, const std::string& topology_flag,
                                  const Plan& plan, bool quiet) {
  if (!topology_flag.empty()) return LoadTopologyFlag(topology_flag, quiet);
  if (plan.topology_source == "built-in") return SameNameAsPlan(plan_file, plan, DefaultTopology());
  std::error_code error;
  if (!plan.topology_source.empty() &&
      std::filesystem::is_regular_file(plan.topology_source, error)) {
    return SameNameAsPlan(plan_file, plan, LoadTopologyFile(plan.topology_source));
  }
  return Status::Invalid(plan_file + ": made for topology '" + plan.topology_name + "' from '" +
                         plan.topology_source +
                         "', which is not a file here; pass --topology FILE");
}

}  // namespace

Result<Topology> PlanTopology(const std::string& plan_file, const std::string& topology_flag,
                              const Plan& plan, const ModelFlags& model, bool quiet) {
  MESHPLAN_ASSIGN_OR_RETURN(auto whole, PlanTopologyFile(plan_file, topology_flag, plan, quiet));
  // A plan made with --tp/--dp runs on one context-parallel group's share of the cluster.
  auto cluster = ContextParallelCluster(whole, ParallelDegrees{plan.tp, plan.dp});
  if (!cluster.ok()) return cluster.status().WithContext(plan_file);
  Topology topology = std::move(cluster).value();
  if (model.attention_kernel.empty() && !plan.attention_kernel.empty()) {
    MESHPLAN_RETURN_IF_ERROR(
        topology.UseAttentionKernel(plan.attention_kernel).WithContext(plan_file));
  }
  MESHPLAN_RETURN_IF_ERROR(model.Apply(topology));
  return topology;
}

void NoteHeadDim(const Topology& topology, int64_t head_dim, bool quiet) {
  const std::string caveat = topology.gpu.HeadDimCaveat(head_dim);
  if (quiet || caveat.empty()) return;
  std::fprintf(stderr, "meshplan: note: %s: %s\n", topology.source.c_str(), caveat.c_str());
}

void NoteCalibrationSpeed(const Topology& topology, bool quiet) {
  if (quiet) return;
  for (const std::string& caveat :
       {topology.calibration.SpeedCaveat(), topology.calibration.DrawCaveat()}) {
    if (!caveat.empty())
      std::fprintf(stderr, "meshplan: note: %s: %s\n", topology.source.c_str(), caveat.c_str());
  }
}

Status SetReplayMemoryLimit(const std::string& max_memory, sim::SimOptions* options) {
  if (max_memory.empty()) {
    options->memory_limit_bytes = exec::AvailableHostMemoryBytes();
    options->memory_limit_source = "available now, from /proc/meminfo and the cgroup limit";
    return Status::Ok();
  }
  auto bytes = ParseCount(max_memory);
  if (!bytes.ok()) return bytes.status().WithContext("--max-memory");
  options->memory_limit_bytes = static_cast<double>(*bytes);
  options->memory_limit_source = "--max-memory " + max_memory;
  return Status::Ok();
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

Status CheckWritableOutput(const std::string& path) { return CheckOutputPath(path); }

int EmitReport(const std::string& out, const std::string& text, bool quiet) {
  if (out.empty()) {
    std::fputs(text.c_str(), stdout);
    std::fflush(stdout);
    return kExitOk;
  }
  if (Status st = WriteFileAtomically(out, text); !st.ok()) return ReportError(st);
  if (!quiet) std::fprintf(stderr, "meshplan: wrote the report to %s\n", out.c_str());
  return kExitOk;
}

bool SameOutputFile(const std::string& a, const std::string& b) {
  if (a.empty() || b.empty()) return false;
  if (a == b) return true;
  std::error_code error;
  return std::filesystem::equivalent(a, b, error) && !error;
}

int EmitCsvReport(const std::string& out, const std::string& csv, bool append, bool quiet) {
  if (!append) return EmitReport(out, csv, quiet);
  const size_t end_of_header = csv.find('\n') + 1;
  const std::string header = csv.substr(0, end_of_header);
  const std::string rows = csv.substr(end_of_header);
  if (out.empty()) return EmitReport(out, rows, quiet);
  if (Status st = AppendCsvRows(out, header, rows); !st.ok()) return ReportError(st);
  if (!quiet) std::fprintf(stderr, "meshplan: appended to %s\n", out.c_str());
  return kExitOk;
}

}  // namespace meshplan::tools
