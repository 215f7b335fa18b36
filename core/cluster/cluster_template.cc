#include "core/cluster/cluster_template.h"

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
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

// A whole-string integer (from_chars on the text), or nullopt.
std::optional<int64_t> WholeInteger(std::string_view text) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

std::optional<double> WholeNumber(std::string_view text) {
  if (text.empty()) return std::nullopt;
  const std::string copy(text);
  char* end = nullptr;
  const double value = std::strtod(copy.c_str(), &end);
  if (end != copy.c_str() + copy.size() || !std::isfinite(value)) return std::nullopt;
  return value;
}

// Splits on `sep`, keeping empty parts.
std::vector<std::string_view> Split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    const size_t at = text.find(sep, start);
    parts.push_back(
        text.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start));
    if (at == std::string_view::npos) break;
    start = at + 1;
  }
  return parts;
}

}  // namespace

Result<TemplateFabric> ParseTemplateFabric(std::string_view spec) {
  const std::string flag = "--fabric '" + std::string(spec) + "'";
  const std::vector<std::string_view> parts = Split(spec, ':');
  if (parts.size() != 3 && parts.size() != 4) {
    return Status::Invalid(flag +
                           ": expected NAME:NODES:GBPS[:LATENCY_US] (roce:4:200, "
                           "eth:0-3,6:100:8)");
  }
  TemplateFabric f;
  f.spec = std::string(spec);
  f.name = std::string(parts[0]);
  if (f.name.empty()) return Status::Invalid(flag + ": the fabric needs a name");
  for (const char c : f.name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.'))
      return Status::Invalid(flag + ": the name takes letters, digits, '-', '_' and '.' only");
  }
  for (std::string_view item : Split(parts[1], ',')) {
    const size_t dash = item.find('-');
    const std::optional<int64_t> first = WholeInteger(item.substr(0, dash));
    const std::optional<int64_t> last =
        dash == std::string_view::npos ? first : WholeInteger(item.substr(dash + 1));
    if (!first || !last || *first < 0 || *last < *first) {
      return Status::Invalid(flag + ": '" + std::string(item) +
                             "' is not a node index or a range like 4-7");
    }
    f.nodes.emplace_back(*first, *last);
  }
  const std::optional<double> gbits = WholeNumber(parts[2]);
  if (!gbits || !(*gbits > 0 && *gbits <= 1600))
    return Status::Invalid(flag + ": the NIC rate must be a number in (0, 1600] Gb/s");
  f.nic_gbits = *gbits;
  if (parts.size() == 4) {
    const std::optional<double> us = WholeNumber(parts[3]);
    if (!us || !(*us >= 0 && *us <= 1e6))
      return Status::Invalid(flag + ": the latency must be a number in [0, 1e6] microseconds");
    f.latency_us = *us;
  }
  return f;
}

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
  for (const TemplateFabric& f : t.fabrics) {
    const std::string flag = "--fabric '" + f.spec + "'";
    for (const auto& [first, last] : f.nodes) {
      if (last >= t.nodes) {
        return Status::Invalid(flag + ": node " + std::to_string(last) + " is not in the " +
                               std::to_string(t.nodes) + " nodes (0-" +
                               std::to_string(t.nodes - 1) + ")");
      }
    }
    net.fabrics.push_back({f.name, f.nodes, f.nic_gbits / 8.0 * 1e9,
                           f.latency_us >= 0 ? f.latency_us * 1e-6 : net.latency_s});
  }
  out.levels.push_back(net);
  if (Status fabrics = out.ValidateFabrics(1); !fabrics.ok())
    return Status::Invalid("--fabric: " + fabrics.message());
  MESHPLAN_RETURN_IF_ERROR(out.Validate());
  return out;
}

std::string ClusterHeader(const ClusterTemplate& t, const std::string& source_name) {
  std::string command = "meshplan topo new --gpu " + t.gpu + " --nodes " + std::to_string(t.nodes) +
                        " --gpus-per-node " + std::to_string(t.gpus_per_node) + " --nic-gbps " +
                        Number(t.nic_gbits);
  if (t.net_name != ClusterTemplate{}.net_name) command += " --net-name " + t.net_name;
  if (t.net_latency_us >= 0) command += " --net-latency-us " + Number(t.net_latency_us);
  std::string fabrics;
  for (const TemplateFabric& f : t.fabrics) {
    command += " --fabric " + f.spec;
    fabrics += "# " + f.name + ": its nodes' NICs at " + Number(f.nic_gbits) +
               " Gb/s = " + Number(f.nic_gbits / 8.0) + " GB/s per direction ([[level.fabric]]).\n";
  }
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
         "# bandwidths (nccl-tests) when you have them (topologies/README.md).\n" +
         fabrics;
}

}  // namespace meshplan
