#include "core/cluster/cluster_template.h"

#include <array>
#include <cctype>
#include <cstdio>
#include <utility>

#include "core/base/did_you_mean.h"

namespace meshplan {
namespace {

// Each GPU: its short name, its GPU catalog entry (topologies/gpus/) and the shipped cluster file
// whose NVLink level a template takes (docs: topologies/README.md).
struct TemplateGpu {
  std::string_view short_name;
  std::string_view catalog;
  std::string_view cluster;
};
constexpr std::array<TemplateGpu, 5> kGpus = {{
    {"h100", "h100-sxm5", "dgx-h100-1node"},
    {"h200", "h200-sxm", "hgx-h200-32gpu"},
    {"h800", "h800-sxm5", "dgx-h800-1node"},
    {"a100", "a100-sxm4-80gb", "dgx-a100-1node"},
    {"gb200", "b200-nvl72", "gb200-nvl72-4rack"},
}};

std::string GpuNames() {
  std::string short_names;
  std::string catalog_names;
  for (const TemplateGpu& gpu : kGpus) {
    short_names += (short_names.empty() ? "" : ", ") + std::string(gpu.short_name);
    catalog_names += (catalog_names.empty() ? "" : ", ") + std::string(gpu.catalog);
  }
  return short_names + "; or their GPU catalog names " + catalog_names;
}

std::string Number(double x) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g", x);
  return buffer;
}

}  // namespace

Result<std::string> ShippedClusterOfGpu(std::string_view gpu) {
  for (const TemplateGpu& known : kGpus) {
    if (gpu == known.short_name || gpu == known.catalog) return std::string(known.cluster);
  }
  std::vector<std::string> names;
  for (const TemplateGpu& known : kGpus) {
    names.emplace_back(known.short_name);
    names.emplace_back(known.catalog);
  }
  return Status::Invalid("--gpu: unknown GPU '" + std::string(gpu) + "'" + DidYouMean(gpu, names) +
                         " (known: " + GpuNames() + ")");
}

Result<Topology> MakeCluster(const ClusterTemplate& t, const Topology& source) {
  if (t.nodes < 1) return Status::Invalid("--nodes: must be at least 1");
  if (t.gpus_per_node < 1) return Status::Invalid("--gpus-per-node: must be at least 1");
  if (!(t.nic_gbits > 0 && t.nic_gbits <= 1600))
    return Status::Invalid("--nic-gbps: must be in (0, 1600] Gb/s per GPU");
  if (source.levels.empty()) return Status::Invalid(source.source + ": has no levels");
  const NetworkLevel& nvlink = source.levels.front();
  if (t.net_name.empty()) return Status::Invalid("--net-name: must not be empty");
  // It also heads a comment line of the written file: a plain word, nothing to break the line.
  for (const char c : t.net_name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.'))
      return Status::Invalid("--net-name: letters, digits, '-', '_' and '.' only");
  }
  if (t.net_name == nvlink.name) {
    return Status::Invalid("--net-name: '" + t.net_name +
                           "' is the name of the level inside a node; give another");
  }
  if (!(t.net_latency_us < 0 || t.net_latency_us <= 1e6))
    return Status::Invalid("--net-latency-us: must be in [0, 1e6] microseconds");
  if (t.gpus_per_node > nvlink.group_size) {
    return Status::Invalid("--gpus-per-node: " + std::to_string(t.gpus_per_node) +
                           " is more than one " + source.gpu.model + " NVLink domain holds (" +
                           std::to_string(nvlink.group_size) + ", " + source.source + ")");
  }
  Topology out;
  out.name = t.name.empty()
                 ? t.gpu + "-" + std::to_string(t.nodes) + "x" + std::to_string(t.gpus_per_node)
                 : t.name;
  out.description = std::to_string(t.nodes) + " x " + std::to_string(t.gpus_per_node) + " " +
                    source.gpu.model + ", NVLink in the node, one " + Number(t.nic_gbits) +
                    " Gb/s NIC per GPU (meshplan topo new)";
  out.source = out.name;
  out.gpu = source.gpu;
  out.framework = source.framework;
  NetworkLevel node = nvlink;
  node.group_size = t.gpus_per_node;
  out.levels.push_back(node);
  NetworkLevel net;
  net.name = t.net_name;
  net.kind = LinkKind::kRailFatTree;
  net.group_size = t.nodes;
  net.bandwidth_bytes_per_s = t.nic_gbits / 8.0 * 1e9;
  net.latency_s = t.net_latency_us >= 0      ? t.net_latency_us * 1e-6
                  : source.levels.size() > 1 ? source.levels[1].latency_s
                                             : 5e-6;
  net.oversubscription = 1.0;
  out.levels.push_back(net);
  MESHPLAN_RETURN_IF_ERROR(out.Validate());
  return out;
}

std::string ClusterHeader(const ClusterTemplate& t, const std::string& source_name) {
  std::string command = "meshplan topo new --gpu " + t.gpu + " --nodes " + std::to_string(t.nodes) +
                        " --gpus-per-node " + std::to_string(t.gpus_per_node) + " --nic-gbps " +
                        Number(t.nic_gbits);
  if (t.net_name != ClusterTemplate{}.net_name) command += " --net-name " + t.net_name;
  if (t.net_latency_us >= 0) command += " --net-latency-us " + Number(t.net_latency_us);
  const std::string latency = t.net_latency_us >= 0 ? Number(t.net_latency_us) + " us"
                                                    : "the latency of that file's network";
  return "# Written by `" + command +
         "`.\n"
         "# [gpu] names the GPU catalog entry (topologies/gpus/): memory, HBM, peak rates, every\n"
         "# attention library's kernel curve and per-step costs, each number with its source; a "
         "key\n"
         "# written under it overrides the entry's. The nvlink level is the shipped\n"
         "# topologies/" +
         source_name + ".toml's.\n# " + t.net_name + ": one NIC per GPU at " + Number(t.nic_gbits) +
         " Gb/s = " + Number(t.nic_gbits / 8.0) +
         " GB/s per direction, a non-blocking rail-optimised\n"
         "# fat tree, " +
         latency +
         ". Replace the levels' bandwidth and latency with measured bus\n"
         "# bandwidths (nccl-tests) when you have them (topologies/README.md).\n";
}

}  // namespace meshplan
