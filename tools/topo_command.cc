// `meshplan topo list|show|validate`: the shipped clusters, and inspecting and checking cluster
// files.
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>

#include "core/base/atomic_file.h"
#include "core/base/escape.h"
#include "core/base/toml_util.h"
#include "core/base/units.h"
#include "core/cluster/cluster_template.h"
#include "core/cluster/nccl_tests_log.h"
#include "core/cluster/topology_catalog.h"
#include "core/cluster/topology_toml.h"
#include "report/topology/topology_list.h"
#include "report/topology/topology_text.h"
#include "tools/cli_common.h"
#include "tools/commands.h"

namespace meshplan::tools {
namespace {

// `topo new`: the cluster the template describes, as a commented file on stdout or at `out`.
int RunTopoNew(const ClusterTemplate& t, const std::string& out, bool quiet) {
  if (!out.empty()) {
    if (Status st = CheckWritableOutput(out); !st.ok()) return ReportError(st.WithContext("-o"));
  }
  auto source_name = ShippedClusterOfGpu(t.gpu);
  if (!source_name.ok()) return ReportError(source_name.status());
  auto source = LoadTopology(*source_name);
  if (!source.ok()) return ReportError(source.status());
  auto cluster = MakeCluster(t, *source);
  if (!cluster.ok()) return ReportError(cluster.status());
  const std::string text =
      ClusterHeader(t, *source_name) + TopologyToToml(*cluster, /*gpu_by_catalog=*/true);
  if (out.empty()) {
    std::fputs(text.c_str(), stdout);
    return kExitOk;
  }
  if (Status st = WriteFileAtomically(out, text); !st.ok()) return ReportError(st);
  if (quiet) return kExitOk;
  // Escaped: --name and -o are the user's text, and this must stay one line.
  std::fprintf(stderr, "meshplan: wrote %s (%lld GPUs) to %s; use it with -t %s\n",
               EscapeControlBytes(cluster->name).c_str(),
               static_cast<long long>(cluster->num_gpus()), EscapeControlBytes(out).c_str(),
               EscapeControlBytes(out).c_str());
  return kExitOk;
}

struct FromNcclTestsFlags {
  std::string log;
  std::string base;   // -t: the cluster whose level is set
  std::string level;  // the level the log measured
  std::string out;
  bool quiet = false;  // -q: no summary line on stderr
};

// The nccl-tests log at `path`, read whole (at most kMaxTextFileBytes: /dev/zero is refused, not
// exhausted) and parsed.
Result<NcclTestsResult> ReadNcclTestsLog(const std::string& path) {
  auto text = ReadTextFile(path);
  if (!text.ok()) {
    if (text.status().code() == ErrorCode::kNotFound)
      return Status::NotFound(path + ": cannot read the nccl-tests log");
    return text.status();
  }
  return ParseNcclTestsLog(*text, path);
}

// The level named `name` of `cluster`. Error: no such level (naming --level and the levels).
Result<NetworkLevel*> FindLevel(Topology& cluster, const std::string& name) {
  std::string names;
  for (NetworkLevel& l : cluster.levels) {
    if (l.name == name) return &l;
    names += (names.empty() ? "" : ", ") + l.name;
  }
  return Status::Invalid("--level: '" + name + "' is not a level of " + cluster.name + " (" +
                         names + ")");
}

// A note when the log's busbw is not the level's per-GPU rate: the ranks crossed other levels too.
void NoteLevelCaveat(const FromNcclTestsFlags& f, const NcclTestsResult& measured, bool innermost) {
  if (f.quiet) return;  // -q: nothing on stderr but errors
  if (innermost && measured.hosts > 1) {
    std::fprintf(stderr,
                 "meshplan: note: %s spans %lld hosts: its busbw includes the network between "
                 "them; for %s measure the GPUs of one host\n",
                 f.log.c_str(), static_cast<long long>(measured.hosts), f.level.c_str());
  } else if (!innermost && measured.ranks > measured.hosts && measured.hosts > 0) {
    std::fprintf(stderr,
                 "meshplan: note: %s has several ranks per host: NCCL's rings cross the network "
                 "only between hosts, so busbw is above one NIC's rate; for %s measure one rank "
                 "per host (mpirun -npernode 1 ... -g 1)\n",
                 f.log.c_str(), f.level.c_str());
  }
}

// printf's %.4g of `value`.
std::string Short(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", value);
  return text;
}

// Where the level's bandwidth came from: a line of the file's `provenance` (the TOML writer
// quotes it), after the base file's own lines. Built as a string (no fixed buffer), the log's path
// and device escaped onto one line.
std::string ProvenanceLine(const std::string& cluster, const FromNcclTestsFlags& f,
                           const NcclTestsResult& measured, double before_GBps, double set_GBps,
                           bool full_mesh) {
  return EscapeControlBytes(cluster) + ": level " + EscapeControlBytes(f.level) +
         "'s bandwidth_GBps set to " + Short(set_GBps) +
         (full_mesh ? " a link (the busbw over the links to the other ranks)" : "") + " (was " +
         Short(before_GBps) + "), the highest bus bandwidth (busbw) in " +
         EscapeControlBytes(f.log) + (measured.collective.empty() ? "" : ", ") +
         EscapeControlBytes(measured.collective) + ": " + Short(measured.peak_busbw_GBps) +
         " GB/s at " + std::to_string(measured.peak_bytes) + " bytes, " +
         std::to_string(measured.rows) + " rows, " + std::to_string(measured.ranks) + " ranks on " +
         std::to_string(measured.hosts) + " host(s)" + (measured.device.empty() ? "" : ", ") +
         EscapeControlBytes(measured.device);
}

// `topo from-nccl-tests`: the base cluster with one level's bandwidth set to the bus bandwidth
// an nccl-tests log measured (its highest busbw), as a file on stdout or at `out`.
int RunTopoFromNcclTests(const FromNcclTestsFlags& f) {
  if (!f.out.empty()) {
    if (Status st = CheckWritableOutput(f.out); !st.ok()) return ReportError(st.WithContext("-o"));
  }
  auto measured = ReadNcclTestsLog(f.log);
  if (!measured.ok()) return ReportError(measured.status());
  auto cluster = LoadTopologyFlag(f.base);
  if (!cluster.ok()) return ReportError(cluster.status());
  auto level = FindLevel(*cluster, f.level);
  if (!level.ok()) return ReportError(level.status());
  // busbw is a level's per-GPU rate only when the ranks cross that level alone.
  NoteLevelCaveat(f, *measured, *level == &cluster->levels.front());
  const double before_GBps = (*level)->bandwidth_bytes_per_s / 1e9;
  (*level)->bandwidth_bytes_per_s = LevelBandwidthFromBusbw(**level, *measured);
  if (Status st = cluster->Validate(); !st.ok())
    return ReportError(st.WithContext(f.log + ": the measured bandwidth"));
  cluster->provenance.push_back(ProvenanceLine(cluster->name, f, *measured, before_GBps,
                                               (*level)->bandwidth_bytes_per_s / 1e9,
                                               (*level)->kind == LinkKind::kFullMesh));
  const std::string file = TopologyToToml(*cluster);
  if (f.out.empty()) {
    std::fputs(file.c_str(), stdout);
  } else if (Status st = WriteFileAtomically(f.out, file); !st.ok()) {
    return ReportError(st);
  }
  if (f.quiet) return kExitOk;
  std::fprintf(stderr, "meshplan: %s: %s bandwidth %.4g -> %.4g GB/s per %s (busbw of %s)%s%s\n",
               cluster->name.c_str(), f.level.c_str(), before_GBps,
               (*level)->bandwidth_bytes_per_s / 1e9,
               (*level)->kind == LinkKind::kFullMesh ? "link" : "GPU", f.log.c_str(),
               f.out.empty() ? "" : "; wrote ", f.out.c_str());
  return kExitOk;
}

// Every flag of the topo subcommands, and which subcommand ran.
struct TopoFlags {
  CLI::App* list = nullptr;
  CLI::App* show = nullptr;
  CLI::App* make = nullptr;
  CLI::App* from_nccl = nullptr;
  std::string list_format = "table";
  std::string show_file;
  std::string show_format = "text";
  std::string validate_file;
  std::string report_out;  // -o of list and show
  bool quiet = false;
  ClusterTemplate cluster;                // topo new
  std::vector<std::string> fabric_specs;  // topo new --fabric, parsed into cluster.fabrics
  std::string new_out;
  FromNcclTestsFlags nccl;
};

// -o FILE and -q, as every command has them (issue 32): list and show write their report there.
void AddOutAndQuiet(CLI::App* command, TopoFlags& f, const std::string& what) {
  command->add_option("--out,-o", f.report_out,
                      "Write " + what + " here (atomically) instead of stdout");
  command->add_flag("--quiet,-q", f.quiet, "No notes on stderr (errors still go there)");
}

void RegisterListShowValidate(CLI::App* topo, TopoFlags& f) {
  f.list = topo->add_subcommand("list", "List the shipped clusters (use one with -t NAME)");
  f.list->add_option("--format", f.list_format, "table or json (text: table's old name)")
      ->capture_default_str();
  AddOutAndQuiet(f.list, f, "the list");
  f.show = topo->add_subcommand("show",
                                "Print a topology (FILE or shipped NAME, or the built-in default)");
  f.show->add_option("file", f.show_file,
                     "Topology TOML file or shipped cluster name (default: built-in)");
  f.show->add_option("--format", f.show_format, "text, toml or json")->capture_default_str();
  AddOutAndQuiet(f.show, f, "the topology");
  CLI::App* validate = topo->add_subcommand(
      "validate", "Check a topology file (or shipped NAME); exit 2 with the reason if it is bad");
  validate->add_option("file", f.validate_file, "Topology TOML file or shipped cluster name")
      ->required();
}

void RegisterNew(CLI::App* topo, TopoFlags& f) {
  f.make = topo->add_subcommand(
      "new", "Write a cluster file from a GPU name, nodes, GPUs per node and NIC rate");
  f.make
      ->add_option(
          "--gpu", f.cluster.gpu,
          "GPU: h100, h200, h800, a100, gb200, mi300x, l40s or rtx4090, or its GPU catalog name "
          "(h100-sxm5, ...): the file names that catalog entry (topologies/gpus/)")
      ->required();
  f.make->add_option("--nodes", f.cluster.nodes, "Nodes (gb200: NVL72 racks)")
      ->capture_default_str();
  f.make
      ->add_option("--gpus-per-node", f.cluster.gpus_per_node,
                   "GPUs per node (one NVLink domain or xGMI mesh, or one PCIe server)")
      ->capture_default_str();
  f.make
      ->add_option("--nic-gbps", f.cluster.nic_gbits,
                   "Each GPU's NIC in Gb/s (400 for NDR InfiniBand)")
      ->capture_default_str();
  f.make->add_option("--node-link", f.cluster.node_link,
                     "How a node's GPUs reach each other: nvlink, xgmi (an MI300X's full mesh), "
                     "or pcie (PCIe links rated as NCCL rates them; default: the GPU's own, pcie "
                     "for l40s and rtx4090)");
  f.make->add_option("--pcie-gen", f.cluster.pcie.generation,
                     "With pcie: the links' PCIe generation, 3, 4 or 5 (default 4)");
  f.make->add_option("--sockets", f.cluster.pcie.sockets,
                     "With pcie: CPU sockets the node's GPUs spread over (default 1 up to 4 GPUs, "
                     "else 2)");
  f.make->add_option("--cpu", f.cluster.pcie.cpu,
                     "With pcie: the CPU, for the link between sockets: amd, intel-bdw, "
                     "intel-skl, intel-spr or intel-emr (default amd)");
  f.make->add_option("--gpus-per-switch", f.cluster.pcie.gpus_per_switch,
                     "With pcie: GPUs behind each PCIe switch, sharing its uplink (default 1: "
                     "each GPU on its own CPU root port)");
  f.make->add_option("--p2p", f.cluster.pcie.p2p,
                     "With pcie and switches: on (NCCL copies peer to peer through a switch) or "
                     "off (through host memory; default off for rtx4090, else on)");
  f.make->add_option("--name", f.cluster.name, "The cluster's name (default GPU-NODESxGPUS)");
  f.make
      ->add_option("--net-name", f.cluster.net_name,
                   "The name of the level between nodes (as the shipped files: ib; roce, ...)")
      ->capture_default_str();
  f.make->add_option("--net-latency-us", f.cluster.net_latency_us,
                     "Its latency in microseconds (default: the shipped file's, 5 us)");
  f.make->add_option(
      "--fabric", f.fabric_specs,
      "Nodes on another fabric than the rest, NAME:NODES:GBPS[:LATENCY_US] (roce:4:200: node 4's "
      "NICs at 200 Gb/s; NODES a list of indices and ranges from 0, 0-3,6); repeatable "
      "(topologies/README.md, mixed fabrics)");
  f.make->add_option("--out,-o", f.new_out, "Write the file here instead of stdout");
  f.make->add_flag("--quiet,-q", f.quiet, "No summary line on stderr (errors still go there)");
}

void RegisterFromNcclTests(CLI::App* topo, TopoFlags& f) {
  f.from_nccl = topo->add_subcommand(
      "from-nccl-tests",
      "Write a cluster file whose level bandwidth is the bus bandwidth an nccl-tests log measured");
  f.from_nccl->add_option("log", f.nccl.log, "nccl-tests output (all_reduce_perf ... > LOG)")
      ->required();
  f.from_nccl
      ->add_option("--topology,-t", f.nccl.base, "The cluster to start from (FILE or shipped NAME)")
      ->required();
  f.from_nccl
      ->add_option("--level", f.nccl.level,
                   "The level the log measured (nvlink for one node's GPUs, ib across nodes)")
      ->required();
  f.from_nccl->add_option("--out,-o", f.nccl.out, "Write the file here instead of stdout");
  f.from_nccl->add_flag("--quiet,-q", f.nccl.quiet,
                        "No summary line on stderr (errors still go there)");
}

// --format and -o of list and show, before any work.
Status CheckReportFlags(const std::string& format, const std::vector<std::string>& formats,
                        const std::string& out) {
  MESHPLAN_RETURN_IF_ERROR(CheckFormat(format, formats));
  if (!out.empty()) MESHPLAN_RETURN_IF_ERROR(CheckWritableOutput(out).WithContext("-o"));
  return Status::Ok();
}

// `topo list`: the shipped clusters, as a table or JSON.
int RunTopoList(const TopoFlags& f) {
  if (Status st = CheckReportFlags(f.list_format, {"table", "text", "json"}, f.report_out);
      !st.ok())
    return ReportError(st);
  auto dir = ShippedTopologyDir(ProgramTopologySearch());
  if (!dir.ok()) return ReportError(dir.status());
  auto clusters = LoadTopologiesIn(*dir);
  if (!clusters.ok()) return ReportError(clusters.status());
  return EmitReport(f.report_out,
                    f.list_format == "json" ? report::TopologyListJson(*dir, *clusters)
                                            : report::TopologyListText(*dir, *clusters),
                    f.quiet);
}

// `topo show`: one topology as text, TOML or JSON.
int RunTopoShow(const TopoFlags& f) {
  if (Status st = CheckReportFlags(f.show_format, {"text", "toml", "json"}, f.report_out); !st.ok())
    return ReportError(st);
  auto t = f.show_file.empty() ? Result<Topology>(DefaultTopology()) : LoadTopology(f.show_file);
  if (!t.ok()) return ReportError(t.status());
  return EmitReport(f.report_out,
                    f.show_format == "toml"   ? TopologyToToml(*t)
                    : f.show_format == "json" ? report::TopologyJson(*t)
                                              : report::TopologyText(*t),
                    f.quiet);
}

// `topo validate`.
int RunTopoValidate(const TopoFlags& f) {
  auto t = LoadTopology(f.validate_file);
  if (!t.ok()) return ReportError(t.status());
  // Valid, but said as plan says it (issue 48): a value no hardware reaches is usually a slip.
  PrintPlausibilityNotes(*t);
  std::printf("%s: ok (%lld GPUs, %d levels)\n", f.validate_file.c_str(),
              static_cast<long long>(t->num_gpus()), t->num_levels());
  return kExitOk;
}

}  // namespace

Runner RegisterTopoCommand(CLI::App& app) {
  CLI::App* topo =
      app.add_subcommand("topo", "List shipped clusters, inspect or check cluster topology files");
  topo->require_subcommand(1);
  auto f = std::make_shared<TopoFlags>();
  RegisterListShowValidate(topo, *f);
  RegisterNew(topo, *f);
  RegisterFromNcclTests(topo, *f);
  return [f]() -> int {
    if (*f->make) {
      ClusterTemplate cluster = f->cluster;
      for (const std::string& spec : f->fabric_specs) {
        auto fabric = ParseTemplateFabric(spec);
        if (!fabric.ok()) return ReportError(fabric.status());
        cluster.fabrics.push_back(*std::move(fabric));
      }
      return RunTopoNew(cluster, f->new_out, f->quiet);
    }
    if (*f->from_nccl) return RunTopoFromNcclTests(f->nccl);
    if (*f->list) return RunTopoList(*f);
    if (*f->show) return RunTopoShow(*f);
    return RunTopoValidate(*f);
  };
}

}  // namespace meshplan::tools
