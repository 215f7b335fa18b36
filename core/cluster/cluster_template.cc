#include "core/cluster/cluster_template.h"

#include <algorithm>
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

// Each GPU: its short name, its GPU catalog entry (topologies/gpus/), the shipped cluster file
// whose GPU (and node level) a template takes (docs: topologies/README.md), and the fabric joining
// a node's GPUs, which that file's innermost level describes: "nvlink" (NVSwitch), "xgmi" (AMD
// Infinity Fabric, a full mesh), or "" (none: its nodes are PCIe nodes).
struct TemplateGpu {
  std::string_view short_name;
  std::string_view catalog;
  std::string_view cluster;
  std::string_view scale_up = "nvlink";
  bool p2p = true;  // whether its driver copies peer to peer over PCIe (GeForce: no)
};
constexpr std::array<TemplateGpu, 8> kGpus = {{
    {"h100", "h100-sxm5", "dgx-h100-1node"},
    {"h200", "h200-sxm", "hgx-h200-32gpu"},
    {"h800", "h800-sxm5", "dgx-h800-1node"},
    {"a100", "a100-sxm4-80gb", "dgx-a100-1node"},
    {"gb200", "b200-nvl72", "gb200-nvl72-4rack"},
    {"mi300x", "mi300x", "mi300x-8gpu", "xgmi"},
    {"l40s", "l40s", "l40s-pcie-8gpu", ""},
    {"rtx4090", "rtx-4090", "rtx4090-pcie-8gpu", "", false},
}};

// NCCL's PCI hardware latency for the Simple protocol of its ring, the one large messages take
// (NVIDIA/nccl 5067397, src/graph/tuning.cc, hwLatencies[NCCL_HW_PCI]: 1.0-5.7 us by protocol).
constexpr double kPcieLatencySeconds = 5.7e-6;
// More GPUs than any PCIe server holds: a typo, not a machine.
constexpr int64_t kMaxPcieGpusPerNode = 64;

const TemplateGpu* FindGpu(std::string_view gpu) {
  for (const TemplateGpu& known : kGpus) {
    if (gpu == known.short_name || gpu == known.catalog) return &known;
  }
  return nullptr;
}

// The template's PcieNode with its defaults filled in.
PcieNode ResolvedPcie(const ClusterTemplate& t) {
  PcieNode out = t.pcie;
  if (out.generation == 0) out.generation = 4;
  if (out.sockets == 0) out.sockets = t.gpus_per_node <= 4 ? 1 : 2;
  if (out.cpu.empty()) out.cpu = "amd";
  if (out.gpus_per_switch == 0) out.gpus_per_switch = 1;
  if (out.p2p.empty()) {
    const TemplateGpu* known = FindGpu(t.gpu);
    out.p2p = known == nullptr || known->p2p ? "on" : "off";
  }
  return out;
}

// The GPU's own fabric in a node: nvlink, xgmi, or "" (PCIe only; an unknown GPU: nvlink).
std::string ScaleUpOf(std::string_view gpu) {
  const TemplateGpu* known = FindGpu(gpu);
  return known == nullptr ? "nvlink" : std::string(known->scale_up);
}

std::string NodeLinkOf(const ClusterTemplate& t) {
  if (!t.node_link.empty()) return t.node_link;
  const std::string own = ScaleUpOf(t.gpu);
  return own.empty() ? "pcie" : own;
}

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

// The levels of a PCIe node (PcieNode): "pcie", the GPUs of one socket, each at its link's
// bandwidth (with switches: "pcie-switch", the GPUs of one switch, then "pcie" of the socket's
// switches, each uplink shared by its GPUs); with more than one socket, "socket" across them at
// the same per-GPU bandwidth, its oversubscription the socket's GPUs' links over what leaves the
// socket (the flow network's uplink of a socket is then exactly that, simulator/flow_network.h).
// Errors name the flag.
Result<std::vector<NetworkLevel>> PcieNodeLevels(const ClusterTemplate& t) {
  const PcieNode p = ResolvedPcie(t);
  const double link_gbps = PcieLinkGBps(p.generation);
  if (link_gbps <= 0)
    return Status::Invalid("--pcie-gen: " + std::to_string(p.generation) + " is not 3, 4 or 5");
  const double between_gbps = InterSocketGBps(p.cpu);
  if (between_gbps <= 0) {
    return Status::Invalid("--cpu: unknown CPU '" + p.cpu +
                           "' (expected amd, intel-bdw, intel-skl, intel-spr or intel-emr)");
  }
  if (t.gpus_per_node > kMaxPcieGpusPerNode) {
    return Status::Invalid("--gpus-per-node: " + std::to_string(t.gpus_per_node) +
                           " GPUs on PCIe in one node; at most " +
                           std::to_string(kMaxPcieGpusPerNode));
  }
  if (p.sockets < 1 || p.sockets > t.gpus_per_node || t.gpus_per_node % p.sockets != 0) {
    return Status::Invalid("--sockets: " + std::to_string(p.sockets) + " does not divide the " +
                           std::to_string(t.gpus_per_node) + " GPUs of a node evenly");
  }
  const int64_t per_socket = t.gpus_per_node / p.sockets;
  const int64_t k = p.gpus_per_switch;
  if (k < 1 || k > per_socket || per_socket % k != 0) {
    return Status::Invalid("--gpus-per-switch: " + std::to_string(k) + " does not divide the " +
                           std::to_string(per_socket) + " GPUs of a socket evenly");
  }
  if (p.p2p != "on" && p.p2p != "off")
    return Status::Invalid("--p2p: '" + p.p2p + "' is not on or off");
  std::vector<NetworkLevel> levels;
  NetworkLevel pcie;
  pcie.name = "pcie";
  pcie.kind = LinkKind::kSwitch;
  pcie.group_size = per_socket;
  pcie.bandwidth_bytes_per_s = link_gbps * 1e9;
  pcie.latency_s = kPcieLatencySeconds;
  const int64_t switches = per_socket / k;
  if (k > 1) {
    // The GPUs of one switch: peer to peer through it at their links; without P2P every copy
    // goes up the switch's one uplink to host memory and down again, k GPUs to one link.
    NetworkLevel below = pcie;
    below.name = "pcie-switch";
    below.group_size = k;
    below.oversubscription = p.p2p == "on" ? 1.0 : static_cast<double>(k);
    levels.push_back(below);
    if (switches > 1) {
      // The switches of one socket, each uplink shared by its k GPUs.
      pcie.kind = LinkKind::kFatTree;
      pcie.group_size = switches;
      pcie.oversubscription = static_cast<double>(k);
      levels.push_back(pcie);
    }
  } else {
    levels.push_back(pcie);
  }
  if (p.sockets > 1) {
    NetworkLevel socket = pcie;
    socket.name = "socket";
    socket.kind = LinkKind::kFatTree;
    socket.group_size = p.sockets;
    // What leaves a socket crosses the CPUs' link, and its switches' uplinks before it.
    const double out_gbps = std::min(between_gbps, static_cast<double>(switches) * link_gbps);
    socket.oversubscription = std::max(1.0, static_cast<double>(per_socket) * link_gbps / out_gbps);
    levels.push_back(socket);
  }
  return levels;
}

// The header lines that say where a PCIe node's numbers come from; `levels` as PcieNodeLevels
// made them.
std::string PcieHeader(const PcieNode& p, const std::vector<NetworkLevel>& levels) {
  const double link = PcieLinkGBps(p.generation);
  std::string text =
      "The node's GPUs reach each other over PCIe, rated as\n"
      "# NCCL's topology model rates it (NVIDIA/nccl src/graph/topo.cc, topo.h): each GPU's "
      "Gen" +
      std::to_string(p.generation) + " x16\n# link at " + Number(link) +
      " GB/s per direction (width x speed / 80), peer to peer or through host\n"
      "# memory alike, " +
      Number(kPcieLatencySeconds * 1e6) + " us (NCCL's PCI latency, src/graph/tuning.cc).\n";
  for (const NetworkLevel& level : levels) {
    const std::string f = Number(level.oversubscription);
    if (level.name == "pcie-switch") {
      text += "# pcie-switch: " + std::to_string(level.group_size) +
              " GPUs behind each PCIe switch, P2P " + p.p2p +
              (p.p2p == "on" ? " (NCCL's default below the CPU)"
                             : ": every copy goes up\n# the switch's one x16 uplink and "
                               "down again (oversubscription " +
                                   f + ")") +
              ".\n";
    } else if (level.name == "pcie") {
      text += "# pcie: " + std::to_string(level.group_size) +
              (p.gpus_per_switch > 1
                   ? " switches of a socket, each uplink shared by its GPUs (oversubscription " +
                         f + ").\n"
                   : " GPUs of a socket, each on its own CPU root port.\n");
    } else if (level.name == "socket") {
      text += "# socket: " + std::to_string(level.group_size) +
              " CPU sockets joined by the CPUs' link, " + Number(InterSocketGBps(p.cpu)) +
              " GB/s as NCCL rates it\n# for " + p.cpu +
              " CPUs, which all of a socket's GPUs share (oversubscription " + f + ").\n";
    }
  }
  return text;
}

}  // namespace

double PcieLinkGBps(int generation) {
  // NCCL: bw = width x speed / 80 with speed in 100 Mb/s units per lane (kvDictPciGen: Gen3 "8
  // GT/s" 60, Gen4 "16 GT/s" 120, Gen5 "32 GT/s" 240), width 16.
  switch (generation) {
    case 3:
      return 16 * 60 / 80.0;
    case 4:
      return 16 * 120 / 80.0;
    case 5:
      return 16 * 240 / 80.0;
    default:
      return 0;
  }
}

double InterSocketGBps(std::string_view cpu) {
  if (cpu == "amd") return 16;        // AMD_BW
  if (cpu == "intel-bdw") return 6;   // BDW_QPI_BW (Broadwell and older)
  if (cpu == "intel-skl") return 10;  // SKL_QPI_BW (Skylake to Ice Lake)
  if (cpu == "intel-spr") return 22;  // SRP_QPI_BW (Sapphire Rapids)
  if (cpu == "intel-emr") return 40;  // ERP_QPI_BW (Emerald Rapids)
  return 0;
}

bool IsPcieOnlyGpu(std::string_view gpu) {
  const TemplateGpu* known = FindGpu(gpu);
  return known != nullptr && known->scale_up.empty();
}

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
  if (const TemplateGpu* known = FindGpu(gpu)) return std::string(known->cluster);
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
  const std::string node_link = NodeLinkOf(t);
  if (node_link != "nvlink" && node_link != "xgmi" && node_link != "pcie")
    return Status::Invalid("--node-link: '" + node_link + "' is not nvlink, xgmi or pcie");
  const std::string own = ScaleUpOf(t.gpu);
  if (node_link != "pcie" && node_link != own) {
    return Status::Invalid(
        "--node-link " + node_link + ": the " + source.gpu.model +
        (own.empty()
             ? std::string(" has no NVLink or xGMI; its nodes are PCIe nodes (--node-link pcie)")
             : " joins a node's GPUs over " + own + " (--node-link " + own + ", or pcie)"));
  }
  if (node_link != "pcie") {
    if (t.pcie.generation != 0) return Status::Invalid("--pcie-gen: only with --node-link pcie");
    if (t.pcie.sockets != 0) return Status::Invalid("--sockets: only with --node-link pcie");
    if (!t.pcie.cpu.empty()) return Status::Invalid("--cpu: only with --node-link pcie");
    if (t.pcie.gpus_per_switch != 0)
      return Status::Invalid("--gpus-per-switch: only with --node-link pcie");
    if (!t.pcie.p2p.empty()) return Status::Invalid("--p2p: only with --node-link pcie");
  }
  const NetworkLevel& scale_up = source.levels.front();
  if (t.net_name.empty()) return Status::Invalid("--net-name: must not be empty");
  // It also heads a comment line of the written file: a plain word, nothing to break the line.
  for (const char c : t.net_name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.'))
      return Status::Invalid("--net-name: letters, digits, '-', '_' and '.' only");
  }
  if (node_link != "pcie" && t.net_name == scale_up.name) {
    return Status::Invalid("--net-name: '" + t.net_name +
                           "' is the name of the level inside a node; give another");
  }
  if (!(t.net_latency_us < 0 || t.net_latency_us <= 1e6))
    return Status::Invalid("--net-latency-us: must be in [0, 1e6] microseconds");
  if (node_link != "pcie" && t.gpus_per_node > scale_up.group_size) {
    return Status::Invalid("--gpus-per-node: " + std::to_string(t.gpus_per_node) +
                           " is more than one " + source.gpu.model +
                           (node_link == "xgmi" ? " xGMI mesh" : " NVLink domain") + " holds (" +
                           std::to_string(scale_up.group_size) + ", " + source.source + ")");
  }
  std::vector<NetworkLevel> node_levels;
  if (node_link != "pcie") {
    NetworkLevel node = scale_up;
    node.group_size = t.gpus_per_node;
    node_levels.push_back(node);
  } else {
    MESHPLAN_ASSIGN_OR_RETURN(node_levels, PcieNodeLevels(t));
  }
  Topology out;
  out.name = t.name.empty()
                 ? t.gpu + "-" + std::to_string(t.nodes) + "x" + std::to_string(t.gpus_per_node)
                 : t.name;
  const std::string inside =
      node_link == "nvlink" ? "NVLink in the node"
      : node_link == "xgmi"
          ? "xGMI full mesh in the node"
          : "PCIe Gen" + std::to_string(ResolvedPcie(t).generation) + " in the node";
  out.description = std::to_string(t.nodes) + " x " + std::to_string(t.gpus_per_node) + " " +
                    source.gpu.model + ", " + inside + ", one " + Number(t.nic_gbits) +
                    " Gb/s NIC per GPU (meshplan topo new)";
  out.source = out.name;
  out.gpu = source.gpu;
  out.framework = source.framework;
  for (const NetworkLevel& level : node_levels) {
    if (t.net_name == level.name) {
      return Status::Invalid("--net-name: '" + t.net_name +
                             "' is the name of a level inside a node; give another");
    }
    out.levels.push_back(level);
  }
  NetworkLevel net;
  net.name = t.net_name;
  net.kind = LinkKind::kRailFatTree;
  net.group_size = t.nodes;
  net.bandwidth_bytes_per_s = t.nic_gbits / 8.0 * 1e9;
  net.latency_s = t.net_latency_us >= 0      ? t.net_latency_us * 1e-6
                  : source.levels.size() > 1 ? source.levels.back().latency_s
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
  if (Status fabrics = out.ValidateFabrics(static_cast<int>(out.levels.size()) - 1); !fabrics.ok())
    return Status::Invalid("--fabric: " + fabrics.message());
  MESHPLAN_RETURN_IF_ERROR(out.Validate());
  return out;
}

std::string ClusterHeader(const ClusterTemplate& t, const std::string& source_name) {
  std::string command = "meshplan topo new --gpu " + t.gpu + " --nodes " + std::to_string(t.nodes) +
                        " --gpus-per-node " + std::to_string(t.gpus_per_node) + " --nic-gbps " +
                        Number(t.nic_gbits);
  const bool pcie = NodeLinkOf(t) == "pcie";
  const PcieNode p = ResolvedPcie(t);
  // Empty when the template is refused (MakeCluster says why; no header is written then).
  Result<std::vector<NetworkLevel>> made = PcieNodeLevels(t);
  const std::vector<NetworkLevel> pcie_levels = made.ok() ? *made : std::vector<NetworkLevel>{};
  if (pcie) {
    command += " --node-link pcie --pcie-gen " + std::to_string(p.generation) + " --sockets " +
               std::to_string(p.sockets);
    if (p.sockets > 1) command += " --cpu " + p.cpu;
    if (p.gpus_per_switch > 1)
      command += " --gpus-per-switch " + std::to_string(p.gpus_per_switch) + " --p2p " + p.p2p;
  }
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
         "# written under it overrides the entry's. " +
         (pcie ? PcieHeader(p, pcie_levels)
               : "The " + NodeLinkOf(t) + " level is the shipped\n# topologies/" + source_name +
                     ".toml's" +
                     (NodeLinkOf(t) == "xgmi"
                          ? ": a full mesh, its bandwidth_GBps one link's (each GPU has\n# its "
                            "own link to each of the others; topologies/README.md, \"Full "
                            "meshes\").\n"
                          : ".\n")) +
         "# " + t.net_name + ": one NIC per GPU at " + Number(t.nic_gbits) +
         " Gb/s = " + Number(t.nic_gbits / 8.0) +
         " GB/s per direction, a non-blocking rail-optimised\n"
         "# fat tree, " +
         latency +
         ". Replace the levels' bandwidth and latency with measured bus\n"
         "# bandwidths (nccl-tests) when you have them (topologies/README.md).\n" +
         fabrics;
}

}  // namespace meshplan
