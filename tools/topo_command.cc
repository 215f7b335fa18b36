// `meshplan topo list|show|validate`: the shipped clusters, and inspecting and checking cluster
// files.
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>

#include "core/atomic_file.h"
#include "core/cluster_template.h"
#include "core/escape.h"
#include "core/nccl_tests_log.h"
#include "core/topology_catalog.h"
#include "core/topology_toml.h"
#include "core/units.h"
#include "report/topology_list.h"
#include "tools/cli_common.h"
#include "tools/commands.h"

namespace meshplan::tools {
namespace {

std::string Describe(const Topology& t) {
  char buffer[256];
  std::string out = "name:        " + t.name + "\n";
  if (!t.description.empty()) out += "description: " + t.description + "\n";
  out += "source:      " + t.source + "\n";
  out += "GPUs:        " + std::to_string(t.num_gpus()) + " x " + t.gpu.model + "\n";
  std::snprintf(buffer, sizeof buffer,
                "memory:      %s per GPU, HBM %.0f GB/s, launch overhead %.1f us\n",
                FormatBytes(t.gpu.memory_bytes).c_str(), t.gpu.hbm_bytes_per_s / 1e9,
                t.gpu.launch_overhead_s * 1e6);
  out += buffer;
  out += "peak:       ";
  for (const auto& [dtype, tflops] : t.gpu.peak_tflops) {
    std::snprintf(buffer, sizeof buffer, " %s %.4g TFLOP/s", std::string(DTypeName(dtype)).c_str(),
                  tflops);
    out += buffer;
  }
  std::string others;
  for (const auto& [name, curve] : t.gpu.attention_kernels) {
    if (name != t.gpu.attention_kernel) others += (others.empty() ? "" : ", ") + name;
  }
  out += "\nattention kernel: " + t.gpu.attention_kernel +
         (others.empty() ? "" : " (curves also for " + others + ": --attention-kernel)");
  if (t.gpu.efficiency_head_dim > 0) {
    std::snprintf(buffer, sizeof buffer, "\nattention efficiency (d = %lld):",
                  static_cast<long long>(t.gpu.efficiency_head_dim));
    out += buffer;
  } else {
    out += "\nattention efficiency:";
  }
  for (const EfficiencyPoint& p : t.gpu.attention_efficiency) {
    std::snprintf(buffer, sizeof buffer, " %s:%.0f%%", FormatCount(p.block_tokens).c_str(),
                  p.efficiency * 100);
    out += buffer;
  }
  if (t.gpu.backward_rate_ratio != 1.0) {
    std::snprintf(buffer, sizeof buffer, "\nbackward kernels at %.3gx the forward's rate",
                  t.gpu.backward_rate_ratio);
    out += buffer;
  }
  if (t.gpu.pair_overhead_flops > 0) {
    std::snprintf(buffer, sizeof buffer,
                  "\nnon-matmul work %.3g FLOPs per pair and head (d = 64 runs at %.2fx, d = 32 at "
                  "%.2fx the rate of d = %lld)",
                  t.gpu.pair_overhead_flops, t.gpu.HeadDimRateFactor(64),
                  t.gpu.HeadDimRateFactor(32), static_cast<long long>(t.gpu.efficiency_head_dim));
    out += buffer;
  }
  if (t.gpu.ranks_per_device > 1) {
    std::snprintf(buffer, sizeof buffer,
                  "\nshared device: %lld ranks per device, %.3g kernels at full rate, %s sharing",
                  static_cast<long long>(t.gpu.ranks_per_device), t.gpu.concurrent_kernels,
                  std::string(DeviceSharingName(t.gpu.sharing)).c_str());
    out += buffer;
  }
  out += "\nlevels (innermost first):\n";
  for (int i = 0; i < t.num_levels(); ++i) {
    const NetworkLevel& l = t.levels[i];
    std::snprintf(
        buffer, sizeof buffer,
        "  %d %-8s %-13s group %-5lld (%lld GPUs) %7.1f GB/s per GPU per direction, %.2f us, "
        "oversubscription %.2g",
        i, l.name.c_str(), std::string(LinkKindName(l.kind)).c_str(),
        static_cast<long long>(l.group_size), static_cast<long long>(t.Span(i)),
        l.bandwidth_bytes_per_s / 1e9, l.latency_s * 1e6, l.oversubscription);
    out += buffer;
    if (!l.torus_dims.empty()) {
      out += ", dims";
      for (int64_t d : l.torus_dims) out += " " + std::to_string(d);
    }
    out += "\n";
  }
  return out;
}

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
  const std::string text = ClusterHeader(t, *source_name) + TopologyToToml(*cluster);
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

// `topo from-nccl-tests`: the base cluster with one level's bandwidth set to the bus bandwidth
// an nccl-tests log measured (its highest busbw), as a file on stdout or at `out`.
int RunTopoFromNcclTests(const FromNcclTestsFlags& f) {
  if (!f.out.empty()) {
    if (Status st = CheckWritableOutput(f.out); !st.ok()) return ReportError(st.WithContext("-o"));
  }
  std::ifstream in(f.log, std::ios::binary);
  if (!in) return ReportError(Status::NotFound(f.log + ": cannot read the nccl-tests log"));
  std::ostringstream text;
  text << in.rdbuf();
  auto measured = ParseNcclTestsLog(text.str(), f.log);
  if (!measured.ok()) return ReportError(measured.status());
  auto cluster = LoadTopologyFlag(f.base);
  if (!cluster.ok()) return ReportError(cluster.status());
  NetworkLevel* level = nullptr;
  std::string names;
  bool innermost = false;
  for (NetworkLevel& l : cluster->levels) {
    names += (names.empty() ? "" : ", ") + l.name;
    if (l.name == f.level) {
      level = &l;
      innermost = &l == &cluster->levels.front();
    }
  }
  if (level == nullptr) {
    return ReportError(Status::Invalid("--level: '" + f.level + "' is not a level of " +
                                       cluster->name + " (" + names + ")"));
  }
  // busbw is a level's per-GPU rate only when the ranks cross that level alone.
  if (innermost && measured->hosts > 1) {
    std::fprintf(stderr,
                 "meshplan: note: %s spans %lld hosts: its busbw includes the network between "
                 "them; for %s measure the GPUs of one host\n",
                 f.log.c_str(), static_cast<long long>(measured->hosts), f.level.c_str());
  } else if (!innermost && measured->ranks > measured->hosts && measured->hosts > 0) {
    std::fprintf(stderr,
                 "meshplan: note: %s has several ranks per host: NCCL's rings cross the network "
                 "only between hosts, so busbw is above one NIC's rate; for %s measure one rank "
                 "per host (mpirun -npernode 1 ... -g 1)\n",
                 f.log.c_str(), f.level.c_str());
  }
  const double before_GBps = level->bandwidth_bytes_per_s / 1e9;
  level->bandwidth_bytes_per_s = measured->peak_busbw_GBps * 1e9;
  if (Status st = cluster->Validate(); !st.ok())
    return ReportError(st.WithContext(f.log + ": the measured bandwidth"));
  char line[512];
  std::snprintf(line, sizeof line,
                "# %s: level %s's bandwidth_GBps set to %.4g (was %.4g), the highest bus bandwidth "
                "(busbw) in %s%s%s: %.4g GB/s at %lld bytes, %lld rows, %lld ranks on %lld "
                "host(s)%s%s\n",
                cluster->name.c_str(), f.level.c_str(), measured->peak_busbw_GBps, before_GBps,
                f.log.c_str(), measured->collective.empty() ? "" : ", ",
                measured->collective.c_str(), measured->peak_busbw_GBps,
                static_cast<long long>(measured->peak_bytes),
                static_cast<long long>(measured->rows), static_cast<long long>(measured->ranks),
                static_cast<long long>(measured->hosts), measured->device.empty() ? "" : ", ",
                measured->device.c_str());
  const std::string file = std::string(line) + TopologyToToml(*cluster);
  if (f.out.empty()) {
    std::fputs(file.c_str(), stdout);
  } else {
    if (Status st = WriteFileAtomically(f.out, file); !st.ok()) return ReportError(st);
  }
  if (f.quiet) return kExitOk;
  std::fprintf(stderr, "meshplan: %s: %s bandwidth %.4g -> %.4g GB/s per GPU (busbw of %s)%s%s\n",
               cluster->name.c_str(), f.level.c_str(), before_GBps, measured->peak_busbw_GBps,
               f.log.c_str(), f.out.empty() ? "" : "; wrote ", f.out.c_str());
  return kExitOk;
}

}  // namespace

Runner RegisterTopoCommand(CLI::App& app) {
  CLI::App* topo =
      app.add_subcommand("topo", "List shipped clusters, inspect or check cluster topology files");
  topo->require_subcommand(1);
  auto show_file = std::make_shared<std::string>();
  auto show_format = std::make_shared<std::string>("text");
  // -o FILE and -q, as every command has them (issue 32): list and show write their report there.
  auto report_out = std::make_shared<std::string>();
  auto quiet = std::make_shared<bool>(false);
  auto add_out_and_quiet = [report_out, quiet](CLI::App* command, const std::string& what) {
    command->add_option("--out,-o", *report_out,
                        "Write " + what + " here (atomically) instead of stdout");
    command->add_flag("--quiet,-q", *quiet, "No notes on stderr (errors still go there)");
  };
  auto validate_file = std::make_shared<std::string>();
  CLI::App* list = topo->add_subcommand("list", "List the shipped clusters (use one with -t NAME)");
  auto list_format = std::make_shared<std::string>("table");
  list->add_option("--format", *list_format, "table or json (text: table's old name)")
      ->capture_default_str();
  add_out_and_quiet(list, "the list");
  CLI::App* show = topo->add_subcommand(
      "show", "Print a topology (FILE or shipped NAME, or the built-in default)");
  show->add_option("file", *show_file,
                   "Topology TOML file or shipped cluster name (default: built-in)");
  show->add_option("--format", *show_format, "text, toml or json")->capture_default_str();
  add_out_and_quiet(show, "the topology");
  CLI::App* validate = topo->add_subcommand(
      "validate", "Check a topology file (or shipped NAME); exit 2 with the reason if it is bad");
  validate->add_option("file", *validate_file, "Topology TOML file or shipped cluster name")
      ->required();
  auto template_flags = std::make_shared<ClusterTemplate>();
  auto new_out = std::make_shared<std::string>();
  CLI::App* make = topo->add_subcommand(
      "new", "Write a cluster file from a GPU name, nodes, GPUs per node and NIC rate");
  make->add_option("--gpu", template_flags->gpu,
                   "GPU: h100, h200, h800, a100 or gb200 (its numbers and kernel curves come from "
                   "the shipped file of that GPU)")
      ->required();
  make->add_option("--nodes", template_flags->nodes, "Nodes (gb200: NVL72 racks)")
      ->capture_default_str();
  make->add_option("--gpus-per-node", template_flags->gpus_per_node,
                   "GPUs per node (one NVLink domain)")
      ->capture_default_str();
  make->add_option("--nic-gbps", template_flags->nic_gbits,
                   "Each GPU's NIC in Gb/s (400 for NDR InfiniBand)")
      ->capture_default_str();
  make->add_option("--name", template_flags->name, "The cluster's name (default GPU-NODESxGPUS)");
  make->add_option("--out,-o", *new_out, "Write the file here instead of stdout");
  make->add_flag("--quiet,-q", *quiet, "No summary line on stderr (errors still go there)");
  auto nccl_flags = std::make_shared<FromNcclTestsFlags>();
  CLI::App* from_nccl = topo->add_subcommand(
      "from-nccl-tests",
      "Write a cluster file whose level bandwidth is the bus bandwidth an nccl-tests log measured");
  from_nccl->add_option("log", nccl_flags->log, "nccl-tests output (all_reduce_perf ... > LOG)")
      ->required();
  from_nccl
      ->add_option("--topology,-t", nccl_flags->base,
                   "The cluster to start from (FILE or shipped NAME)")
      ->required();
  from_nccl
      ->add_option("--level", nccl_flags->level,
                   "The level the log measured (nvlink for one node's GPUs, ib across nodes)")
      ->required();
  from_nccl->add_option("--out,-o", nccl_flags->out, "Write the file here instead of stdout");
  from_nccl->add_flag("--quiet,-q", nccl_flags->quiet,
                      "No summary line on stderr (errors still go there)");
  return [list, list_format, show, show_file, show_format, validate_file, make, template_flags,
          new_out, from_nccl, nccl_flags, report_out, quiet]() -> int {
    if (*make) return RunTopoNew(*template_flags, *new_out, *quiet);
    if (*from_nccl) return RunTopoFromNcclTests(*nccl_flags);
    if (*list) {
      if (Status st = CheckFormat(*list_format, {"table", "text", "json"}); !st.ok())
        return ReportError(st);
      if (!report_out->empty()) {
        if (Status st = CheckWritableOutput(*report_out); !st.ok())
          return ReportError(st.WithContext("-o"));
      }
      auto dir = ShippedTopologyDir(ProgramTopologySearch());
      if (!dir.ok()) return ReportError(dir.status());
      auto clusters = LoadTopologiesIn(*dir);
      if (!clusters.ok()) return ReportError(clusters.status());
      return EmitReport(*report_out,
                        *list_format == "json" ? report::TopologyListJson(*dir, *clusters)
                                               : report::TopologyListText(*dir, *clusters),
                        *quiet);
    }
    if (*show) {
      if (Status st = CheckFormat(*show_format, {"text", "toml", "json"}); !st.ok())
        return ReportError(st);
      if (!report_out->empty()) {
        if (Status st = CheckWritableOutput(*report_out); !st.ok())
          return ReportError(st.WithContext("-o"));
      }
      auto t = show_file->empty() ? Result<Topology>(DefaultTopology()) : LoadTopology(*show_file);
      if (!t.ok()) return ReportError(t.status());
      return EmitReport(*report_out,
                        *show_format == "toml"   ? TopologyToToml(*t)
                        : *show_format == "json" ? report::TopologyJson(*t)
                                                 : Describe(*t),
                        *quiet);
    }
    auto t = LoadTopology(*validate_file);
    if (!t.ok()) return ReportError(t.status());
    std::printf("%s: ok (%lld GPUs, %d levels)\n", validate_file->c_str(),
                static_cast<long long>(t->num_gpus()), t->num_levels());
    return kExitOk;
  };
}

}  // namespace meshplan::tools
