#include "capacity/sweep_settings.h"

#include <utility>

#include "core/cluster/topology_catalog.h"
#include "core/cluster/topology_toml.h"

namespace meshplan::capacity {
namespace {

// `top` when set, else `bottom`.
template <typename T>
void Replace(std::optional<T>& bottom, const std::optional<T>& top) {
  if (top) bottom = top;
}

}  // namespace

void SweepSettings::Overlay(const SweepSettings& top) {
  Replace(topology_files, top.topology_files);
  Replace(attention_kernel, top.attention_kernel);
  Replace(step_overhead_ms, top.step_overhead_ms);
  Replace(gpus, top.gpus);
  Replace(tps, top.tps);
  Replace(model, top.model);
  Replace(seq_lens, top.seq_lens);
  Replace(schemes, top.schemes);
  workload.Overlay(top.workload);
  Replace(reserved_memory_bytes, top.reserved_memory_bytes);
  Replace(simulate, top.simulate);
  Replace(framework, top.framework);
  Replace(seq_rounding, top.seq_rounding);
  Replace(dp, top.dp);
  if (!top.workload_source.empty()) {
    workload_source = workload_source.empty() ? top.workload_source
                                              : workload_source + " and " + top.workload_source;
  }
}

Result<SweepSpec> MakeSweepSpec(const SweepSettings& settings) {
  SweepSpec spec;
  spec.seq_lens = settings.seq_lens.value_or(std::vector<int64_t>{Workload::Default().seq_len});
  if (spec.seq_lens.empty()) return Status::Invalid("sweep: no sequence length given");
  spec.base = settings.workload.ApplyTo(Workload::Default());
  const std::string context =
      settings.workload_source.empty() ? "workload" : settings.workload_source + ": workload";
  // Each point sets its own length; the first one checks the rest of the workload.
  MESHPLAN_RETURN_IF_ERROR(
      SetSequenceLength(spec.base, spec.seq_lens.front()).WithContext(context));
  MESHPLAN_RETURN_IF_ERROR(spec.base.Validate().WithContext(context));
  if (!settings.topology_files || settings.topology_files->empty()) {
    spec.topologies.push_back(DefaultTopology());
  } else {
    for (const std::string& path : *settings.topology_files) {
      MESHPLAN_ASSIGN_OR_RETURN(auto topology, LoadTopology(path));
      spec.topologies.push_back(std::move(topology));
    }
  }
  for (Topology& topology : spec.topologies) {
    if (settings.attention_kernel)
      MESHPLAN_RETURN_IF_ERROR(topology.UseAttentionKernel(*settings.attention_kernel));
    if (settings.step_overhead_ms) {
      MESHPLAN_RETURN_IF_ERROR(
          topology.SetStepOverheadMs(*settings.step_overhead_ms).WithContext("--step-overhead-ms"));
    }
  }
  spec.gpus = settings.gpus.value_or(std::vector<int64_t>{});
  spec.tps = settings.tps.value_or(std::vector<int64_t>{});
  spec.model = settings.model;
  spec.schemes = settings.schemes.value_or(std::vector<Scheme>{});
  spec.reserved_memory_bytes = settings.reserved_memory_bytes.value_or(0.0);
  spec.simulate = settings.simulate.value_or(false);
  spec.framework = settings.framework.value_or(planner::Framework::kAny);
  if (std::string why = planner::FrameworkUnsupported(spec.framework); !why.empty())
    return Status::Invalid(why);
  spec.seq_rounding = settings.seq_rounding.value_or(planner::SeqRounding::kAsGiven);
  spec.dp = settings.dp.value_or(1);
  spec.partial_dtype_given = settings.workload.partial_dtype.has_value();
  spec.attention_kernel_given = settings.attention_kernel.has_value();
  return spec;
}

}  // namespace meshplan::capacity
